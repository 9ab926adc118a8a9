// worker_wire.h: the engine <-> plugin worker wire: framed MessagePack messages over a unix socketpair, and the value encodings.
//
// Framing: a native-endian uint32 byte count, then that many bytes of
// MessagePack (nlohmann-json's to_msgpack / from_msgpack: already a
// dependency, a compact binary format with a byte-string type for inline
// tensor bytes, so nothing of ours parses bytes). File descriptors travel as
// SCM_RIGHTS ancillary data with the first byte of a frame. Both ends are the
// same build on the same machine, so native byte order is fine.
// share/docs/host-design.md, "Process isolation", has the message list.
//
// Thread-safety: the functions are pure or act on the given descriptor only;
// one call at a time per descriptor.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ge/op/attrs.h"
#include "ge/op/op_schema.h"
#include "ge/op/status.h"
#include "ge/runtime/tensor.h"

namespace ge::host::wire {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// The largest MessagePack body of a frame either side sends or accepts. A
// frame carries descriptions, attributes, a task plan's kernel binaries and,
// when a tensor is in neither shared arena (an arena too small or full), that
// tensor's bytes; the length header is 32 bits, and a header past this limit
// (garbage on the channel) is refused at once.
inline constexpr std::size_t kMaxFrameBytes = std::size_t{256} << 20;

// `message` as one frame (length header, then its MessagePack body), or
// nullopt when the body would be larger than kMaxFrameBytes; `*body_bytes`
// (when given) is the body's size either way. Throws only std::bad_alloc.
std::optional<std::vector<uint8_t>> Encode(const Json& message, std::size_t* body_bytes = nullptr);
// Writes an encoded frame (and `fds`, at most 4, with it). Returns false
// (errno kept) when the peer is gone or the write fails. Never raises SIGPIPE.
bool SendFrame(int fd, const std::vector<uint8_t>& frame, const std::vector<int>& fds = {});
// Encode then SendFrame; a message too large for a frame is not sent (false,
// errno EMSGSIZE): a caller that can answer otherwise encodes first.
bool Send(int fd, const Json& message, const std::vector<int>& fds = {});

enum class Received { kOk, kClosed, kTimeout, kError };
// Receives one frame into `message` (fds passed with it appended to `fds`,
// owned by the caller, when non-null), waiting until `deadline`
// (Clock::time_point::max(): no limit). kClosed: the peer closed or died, or
// `gone_fd` (a pidfd of the peer, -1: none) became readable while nothing
// more was to be read: the peer ended even if a child of it holds its end
// open; kError: a malformed frame (`why` says what) or a failed read.
Received Receive(int fd, Clock::time_point deadline, Json& message, std::vector<int>* fds, std::string* why,
                 int gone_fd = -1);

// ---- value encodings (the worker rebuilds the same values) ----
Json DescToJson(const TensorDesc& d);
TensorDesc DescFromJson(const Json& j);
Json AttrsToJson(const RuntimeAttrs& attrs);
RuntimeAttrs AttrsFromJson(const Json& j);
Json AttrValueToJson(const AttrValue& v);
AttrValue AttrValueFromJson(const Json& j);
Json SchemaToJson(const OpSchema& s);
std::shared_ptr<const OpSchema> SchemaFromJson(const Json& j);
Json StatusToJson(const Status& s);
Status StatusFromJson(const Json& j);

}  // namespace ge::host::wire
