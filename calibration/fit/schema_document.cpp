#include "calibration/fit/schema_document.h"

#include <fstream>
#include <stdexcept>

namespace gcsim::calibration {

nlohmann::json read_schema_document(const std::string& path, const std::string& schema) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": not JSON (" + e.what() + ")");
  }
  if (!doc.is_object() || doc.value("schema", "") != schema) {
    throw std::runtime_error(path + ": not a " + schema + " file");
  }
  return doc;
}

}  // namespace gcsim::calibration
