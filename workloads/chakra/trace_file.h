// One rank's Chakra execution trace on disk: `PREFIX.<rank>.et`, a stream of
// messages each preceded by its length as a varint32 (protobuf's delimited
// format), a GlobalMetadata first and then one Node per message. This is
// the layout Chakra's converters write and ASTRA-sim reads.
//
// TraceReader hands out one node at a time and keeps nothing it has handed
// out, so reading a file costs memory for one node whatever its length.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "workloads/chakra/et_def.pb.h"

namespace google::protobuf::io {
class FileInputStream;
class FileOutputStream;
}  // namespace google::protobuf::io

namespace gcsim::workloads::chakra {

// A trace that cannot be used: the message names the file, and the node
// (its id and name) when one is at fault.
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "PREFIX.<rank>.et", as ASTRA-sim names a rank's file.
std::string rank_file(const std::string& prefix, int rank);

// "node 12 ('aten::mm')": how errors point at a node.
std::string describe_node(const ChakraProtoMsg::Node& node);

class TraceReader {
 public:
  // Opens `path` and reads its GlobalMetadata; throws TraceError when the
  // file is missing, unreadable or does not start with one.
  explicit TraceReader(std::string path);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  const ChakraProtoMsg::GlobalMetadata& metadata() const { return metadata_; }
  // Reads the next node into `node` (its storage is reused). False at the
  // end of the file; throws TraceError on a truncated or malformed message.
  bool next(ChakraProtoMsg::Node& node);
  // Nodes read so far.
  uint64_t nodes_read() const { return nodes_read_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::unique_ptr<google::protobuf::io::FileInputStream> in_;
  ChakraProtoMsg::GlobalMetadata metadata_;
  uint64_t nodes_read_ = 0;
  uint64_t last_id_ = 0;
  std::string last_name_;
};

class TraceWriter {
 public:
  // Creates (truncates) `path` and writes `metadata`; throws TraceError when
  // the file cannot be written.
  TraceWriter(std::string path, const ChakraProtoMsg::GlobalMetadata& metadata);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void write(const ChakraProtoMsg::Node& node);
  // Flushes and closes; throws TraceError if the data did not reach the file.
  void close();

 private:
  void put(const google::protobuf::MessageLite& message);
  std::string path_;
  int fd_ = -1;
  std::unique_ptr<google::protobuf::io::FileOutputStream> out_;
};

}  // namespace gcsim::workloads::chakra
