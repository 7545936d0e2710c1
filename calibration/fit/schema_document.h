// A measurement file of one schema (a benchmark's JSON results), read whole.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gcsim::calibration {

// The JSON document at `path`, whose top-level "schema" must be `schema`
// (e.g. "gcsim.l2_resident_passes.v1"). Throws std::runtime_error naming the
// file for one that cannot be read, is not JSON, or has another schema.
nlohmann::json read_schema_document(const std::string& path, const std::string& schema);

}  // namespace gcsim::calibration
