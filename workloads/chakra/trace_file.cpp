#include "workloads/chakra/trace_file.h"

#include <fcntl.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gcsim::workloads::chakra {

namespace pbio = google::protobuf::io;
using google::protobuf::util::ParseDelimitedFromZeroCopyStream;
using google::protobuf::util::SerializeDelimitedToZeroCopyStream;

std::string rank_file(const std::string& prefix, int rank) {
  return prefix + "." + std::to_string(rank) + ".et";
}

std::string describe_node(const ChakraProtoMsg::Node& node) {
  std::string s = "node " + std::to_string(node.id());
  if (!node.name().empty()) s += " ('" + node.name() + "')";
  return s;
}

TraceReader::TraceReader(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    throw TraceError(path_ + ": cannot open the trace file: " + std::strerror(errno));
  }
  in_ = std::make_unique<pbio::FileInputStream>(fd_);
  bool clean_eof = false;
  if (!ParseDelimitedFromZeroCopyStream(&metadata_, in_.get(), &clean_eof)) {
    throw TraceError(path_ + (clean_eof ? ": the file is empty; a Chakra trace starts with its "
                                          "GlobalMetadata message"
                                        : ": the first message (GlobalMetadata) is truncated or "
                                          "is not a Chakra GlobalMetadata"));
  }
}

TraceReader::~TraceReader() {
  in_.reset();
  if (fd_ >= 0) ::close(fd_);
}

bool TraceReader::next(ChakraProtoMsg::Node& node) {
  // The delimited parser merges into the message: start from a clean one
  // (Clear keeps its allocations for the next node).
  node.Clear();
  bool clean_eof = false;
  if (ParseDelimitedFromZeroCopyStream(&node, in_.get(), &clean_eof)) {
    ++nodes_read_;
    last_id_ = node.id();
    last_name_ = node.name();
    return true;
  }
  if (clean_eof) return false;
  std::string where = "message " + std::to_string(nodes_read_ + 2) + " (";
  if (nodes_read_ == 0) {
    where += "the first node";
  } else {
    where += "the node after node " + std::to_string(last_id_);
    if (!last_name_.empty()) where += " ('" + last_name_ + "')";
  }
  throw TraceError(path_ + ": " + where + ") is truncated or malformed" +
                   (in_->GetErrno() != 0 ? std::string(": ") + std::strerror(in_->GetErrno())
                                         : std::string()));
}

TraceWriter::TraceWriter(std::string path, const ChakraProtoMsg::GlobalMetadata& metadata)
    : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw TraceError(path_ + ": cannot write the trace file: " + std::strerror(errno));
  out_ = std::make_unique<pbio::FileOutputStream>(fd_);
  put(metadata);
}

TraceWriter::~TraceWriter() {
  if (out_) out_->Close();
  out_.reset();
}

void TraceWriter::write(const ChakraProtoMsg::Node& node) { put(node); }

void TraceWriter::put(const google::protobuf::MessageLite& message) {
  if (!out_ || !SerializeDelimitedToZeroCopyStream(message, out_.get())) {
    throw TraceError(path_ + ": writing the trace failed" +
                     (out_ && out_->GetErrno() != 0
                          ? std::string(": ") + std::strerror(out_->GetErrno())
                          : std::string()));
  }
}

void TraceWriter::close() {
  if (!out_) return;
  const bool ok = out_->Close();  // flushes, then closes the descriptor
  const int err = out_->GetErrno();
  out_.reset();
  fd_ = -1;
  if (!ok) {
    throw TraceError(path_ + ": writing the trace failed" +
                     (err != 0 ? std::string(": ") + std::strerror(err) : std::string()));
  }
}

}  // namespace gcsim::workloads::chakra
