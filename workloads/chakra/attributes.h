// Typed access to a Chakra node's attributes. Tracers disagree on types
// (one writes comm_size as int64, another as uint64 or fixed64), so every
// integer type of AttributeProto's oneof is accepted where an integer is
// expected. A present attribute of the wrong type throws
// std::invalid_argument naming the attribute; the caller adds the node.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "workloads/chakra/et_def.pb.h"

namespace gcsim::workloads::chakra {

const ChakraProtoMsg::AttributeProto* find_attr(const ChakraProtoMsg::Node& node,
                                                std::string_view name);
const ChakraProtoMsg::AttributeProto* find_attr(const ChakraProtoMsg::GlobalMetadata& meta,
                                                std::string_view name);

// Any of int32, int64, uint32, uint64, sint32, sint64, fixed32, fixed64,
// sfixed32, sfixed64 or bool; a uint64 beyond int64's range is refused.
std::optional<int64_t> int_attr(const ChakraProtoMsg::Node& node, std::string_view name);
// An integer or a floating-point value.
std::optional<double> number_attr(const ChakraProtoMsg::Node& node, std::string_view name);
// bool, or an integer (non-zero is true).
std::optional<bool> bool_attr(const ChakraProtoMsg::Node& node, std::string_view name);
// A string; integers are accepted and printed in decimal (pg_name "1" or 1).
std::optional<std::string> string_attr(const ChakraProtoMsg::Node& node, std::string_view name);
std::optional<std::vector<std::string>> string_list_attr(const ChakraProtoMsg::GlobalMetadata& m,
                                                         std::string_view name);

// Builders for the writer.
void add_int(ChakraProtoMsg::Node& node, const std::string& name, int64_t value);
void add_uint(ChakraProtoMsg::Node& node, const std::string& name, uint64_t value);
void add_double(ChakraProtoMsg::Node& node, const std::string& name, double value);
void add_bool(ChakraProtoMsg::Node& node, const std::string& name, bool value);
void add_string(ChakraProtoMsg::Node& node, const std::string& name, const std::string& value);

}  // namespace gcsim::workloads::chakra
