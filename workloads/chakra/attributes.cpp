#include "workloads/chakra/attributes.h"

#include <limits>
#include <stdexcept>

namespace gcsim::workloads::chakra {

using ChakraProtoMsg::AttributeProto;

namespace {

template <typename Holder>
const AttributeProto* find_in(const Holder& h, std::string_view name) {
  for (const AttributeProto& a : h.attr()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::invalid_argument wrong_type(std::string_view name, const char* expected) {
  return std::invalid_argument("attribute '" + std::string(name) + "' must be " + expected);
}

// The integer held by `a`, if it holds one of the integer types.
std::optional<int64_t> as_int(const AttributeProto& a) {
  switch (a.value_case()) {
    case AttributeProto::kInt32Val: return a.int32_val();
    case AttributeProto::kInt64Val: return a.int64_val();
    case AttributeProto::kUint32Val: return a.uint32_val();
    case AttributeProto::kSint32Val: return a.sint32_val();
    case AttributeProto::kSint64Val: return a.sint64_val();
    case AttributeProto::kFixed32Val: return a.fixed32_val();
    case AttributeProto::kSfixed32Val: return a.sfixed32_val();
    case AttributeProto::kSfixed64Val: return a.sfixed64_val();
    case AttributeProto::kBoolVal: return a.bool_val() ? 1 : 0;
    case AttributeProto::kUint64Val:
    case AttributeProto::kFixed64Val: {
      const uint64_t v = a.value_case() == AttributeProto::kUint64Val ? a.uint64_val()
                                                                      : a.fixed64_val();
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        throw std::invalid_argument("attribute '" + a.name() + "' is " + std::to_string(v) +
                                    ", beyond the largest supported value (2^63 - 1)");
      }
      return static_cast<int64_t>(v);
    }
    default: return std::nullopt;
  }
}

}  // namespace

const AttributeProto* find_attr(const ChakraProtoMsg::Node& node, std::string_view name) {
  return find_in(node, name);
}

const AttributeProto* find_attr(const ChakraProtoMsg::GlobalMetadata& meta, std::string_view name) {
  return find_in(meta, name);
}

std::optional<int64_t> int_attr(const ChakraProtoMsg::Node& node, std::string_view name) {
  const AttributeProto* a = find_attr(node, name);
  if (a == nullptr) return std::nullopt;
  if (auto v = as_int(*a)) return v;
  throw wrong_type(name, "an integer");
}

std::optional<double> number_attr(const ChakraProtoMsg::Node& node, std::string_view name) {
  const AttributeProto* a = find_attr(node, name);
  if (a == nullptr) return std::nullopt;
  if (a->value_case() == AttributeProto::kDoubleVal) return a->double_val();
  if (a->value_case() == AttributeProto::kFloatVal) return a->float_val();
  if (auto v = as_int(*a)) return static_cast<double>(*v);
  throw wrong_type(name, "a number");
}

std::optional<bool> bool_attr(const ChakraProtoMsg::Node& node, std::string_view name) {
  const AttributeProto* a = find_attr(node, name);
  if (a == nullptr) return std::nullopt;
  if (auto v = as_int(*a)) return *v != 0;
  throw wrong_type(name, "a bool");
}

std::optional<std::string> string_attr(const ChakraProtoMsg::Node& node, std::string_view name) {
  const AttributeProto* a = find_attr(node, name);
  if (a == nullptr) return std::nullopt;
  if (a->value_case() == AttributeProto::kStringVal) return a->string_val();
  if (auto v = as_int(*a)) return std::to_string(*v);
  throw wrong_type(name, "a string");
}

std::optional<std::vector<std::string>> string_list_attr(const ChakraProtoMsg::GlobalMetadata& m,
                                                         std::string_view name) {
  const AttributeProto* a = find_attr(m, name);
  if (a == nullptr) return std::nullopt;
  if (a->value_case() != AttributeProto::kStringList) throw wrong_type(name, "a string list");
  return std::vector<std::string>(a->string_list().values().begin(),
                                  a->string_list().values().end());
}

void add_int(ChakraProtoMsg::Node& node, const std::string& name, int64_t value) {
  AttributeProto* a = node.add_attr();
  a->set_name(name);
  a->set_int64_val(value);
}

void add_uint(ChakraProtoMsg::Node& node, const std::string& name, uint64_t value) {
  AttributeProto* a = node.add_attr();
  a->set_name(name);
  a->set_uint64_val(value);
}

void add_double(ChakraProtoMsg::Node& node, const std::string& name, double value) {
  AttributeProto* a = node.add_attr();
  a->set_name(name);
  a->set_double_val(value);
}

void add_bool(ChakraProtoMsg::Node& node, const std::string& name, bool value) {
  AttributeProto* a = node.add_attr();
  a->set_name(name);
  a->set_bool_val(value);
}

void add_string(ChakraProtoMsg::Node& node, const std::string& name, const std::string& value) {
  AttributeProto* a = node.add_attr();
  a->set_name(name);
  a->set_string_val(value);
}

}  // namespace gcsim::workloads::chakra
