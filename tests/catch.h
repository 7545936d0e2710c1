// Includes Catch2 v2 or v3, whichever the build found.
#pragma once
#ifdef GCSIM_CATCH3
#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
using Catch::Approx;
#else
#include <catch2/catch.hpp>
#endif
