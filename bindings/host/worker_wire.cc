// worker_wire.cc: frames over a unix socket and the MessagePack encodings of descs, attributes, schemas and statuses.
#include "worker_wire.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

namespace ge::host::wire {

namespace {

constexpr std::size_t kMaxFds = 4;
// The largest frame either side accepts (worker_wire.h, kMaxFrameBytes).
constexpr uint32_t kMaxFrame = static_cast<uint32_t>(kMaxFrameBytes);
static_assert(kMaxFrameBytes <= UINT32_MAX, "the length header is 32 bits");
// A body is read in pieces of at most this many bytes, the buffer growing
// only as bytes arrive: a length header that lies costs no memory up front.
constexpr std::size_t kReadPiece = 1U << 20;

bool WriteAll(int fd, const uint8_t* p, std::size_t n, const std::vector<int>& fds) {
  bool first = true;
  while (n > 0) {
    iovec iov{const_cast<uint8_t*>(p), n};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
    if (first && !fds.empty()) {
      std::memset(control, 0, sizeof(control));
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    const ssize_t w = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    first = false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// Reads at least `at_least` and at most `n` bytes by `deadline`; *got says how many.
Received ReadSome(int fd, uint8_t* p, std::size_t n, std::size_t at_least, Clock::time_point deadline,
                  std::vector<int>* fds, std::size_t* got, int gone_fd) {
  *got = 0;
  while (*got < at_least) {
    if (deadline != Clock::time_point::max() || gone_fd >= 0) {
      long long left = 1 << 30;
      if (deadline != Clock::time_point::max()) {
        left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return Received::kTimeout;
      }
      pollfd pfd[2] = {{fd, POLLIN, 0}, {gone_fd, POLLIN, 0}};
      const int r = ::poll(pfd, gone_fd >= 0 ? 2 : 1, static_cast<int>(std::min<long long>(left + 1, 1 << 30)));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return Received::kError;
      if (r == 0) continue;  // re-checks the deadline
      // Bytes already sent are read first; the peer's end with none pending is the end.
      if (pfd[0].revents == 0 && gone_fd >= 0 && (pfd[1].revents & POLLIN) != 0) return Received::kClosed;
    }
    iovec iov{p + *got, n - *got};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t r = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno == ECONNRESET ? Received::kClosed : Received::kError;
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      std::vector<int> passed(count);
      std::memcpy(passed.data(), CMSG_DATA(c), count * sizeof(int));
      for (int f : passed) {
        if (fds != nullptr) {
          fds->push_back(f);
        } else {
          ::close(f);
        }
      }
    }
    if (r == 0) return Received::kClosed;
    *got += static_cast<std::size_t>(r);
  }
  return Received::kOk;
}

// Reads exactly n bytes by `deadline`.
Received ReadAll(int fd, uint8_t* p, std::size_t n, Clock::time_point deadline, std::vector<int>* fds, int gone_fd) {
  std::size_t got = 0;
  return ReadSome(fd, p, n, n, deadline, fds, &got, gone_fd);
}

std::vector<int64_t> DimsOf(const Shape& s) { return s.Dims(); }

}  // namespace

std::optional<std::vector<uint8_t>> Encode(const Json& message, std::size_t* body_bytes) {
  std::vector<uint8_t> frame(sizeof(uint32_t));
  Json::to_msgpack(message, nlohmann::detail::output_adapter<uint8_t>(frame));
  const std::size_t body = frame.size() - sizeof(uint32_t);
  if (body_bytes != nullptr) *body_bytes = body;
  if (body > kMaxFrame) return std::nullopt;
  const uint32_t n = static_cast<uint32_t>(body);
  std::memcpy(frame.data(), &n, sizeof(n));
  return frame;
}

bool SendFrame(int fd, const std::vector<uint8_t>& frame, const std::vector<int>& fds) {
  if (fds.size() > kMaxFds) return false;
  return WriteAll(fd, frame.data(), frame.size(), fds);
}

bool Send(int fd, const Json& message, const std::vector<int>& fds) {
  std::optional<std::vector<uint8_t>> frame = Encode(message);
  if (!frame) {
    errno = EMSGSIZE;
    return false;
  }
  return SendFrame(fd, *frame, fds);
}

Received Receive(int fd, Clock::time_point deadline, Json& message, std::vector<int>* fds, std::string* why,
                 int gone_fd) {
  // One read takes the length and, for the usual small frame, the whole body:
  // the two sides strictly alternate (one frame answers one frame), so a read
  // never takes bytes of a later frame; any surplus is a protocol error.
  constexpr std::size_t kFirst = 4096;
  std::vector<uint8_t> buf(kFirst);
  std::size_t got = 0;
  Received r = ReadSome(fd, buf.data(), kFirst, sizeof(uint32_t), deadline, fds, &got, gone_fd);
  if (r != Received::kOk) return r;
  uint32_t n = 0;
  std::memcpy(&n, buf.data(), sizeof(n));
  if (n > kMaxFrame) {
    if (why) *why = "a frame of " + std::to_string(n) + " bytes (supported: at most " + std::to_string(kMaxFrame) + ")";
    return Received::kError;
  }
  const std::size_t total = sizeof(uint32_t) + n;
  if (got > total) {
    if (why) *why = std::to_string(got - total) + " bytes after a frame";
    return Received::kError;
  }
  buf.resize(got);
  while (buf.size() < total) {
    const std::size_t at = buf.size();
    const std::size_t piece = std::min(total - at, kReadPiece);
    buf.resize(at + piece);
    r = ReadAll(fd, buf.data() + at, piece, deadline, fds, gone_fd);
    if (r != Received::kOk) return r;
  }
  message = Json::from_msgpack(buf.begin() + sizeof(uint32_t), buf.end(), /*strict=*/true, /*allow_exceptions=*/false);
  if (message.is_discarded()) {
    if (why) *why = "a frame that is not MessagePack";
    return Received::kError;
  }
  return Received::kOk;
}

Json DescToJson(const TensorDesc& d) {
  return Json{{"o", DimsOf(d.shape.GetOriginShape())},
              {"s", DimsOf(d.shape.GetStorageShape())},
              {"of", static_cast<int32_t>(d.format.GetOriginFormat())},
              {"sf", static_cast<int32_t>(d.format.GetStorageFormat())},
              {"x", d.format.GetExpandDimsType().ToString()},
              {"dt", static_cast<int32_t>(d.data_type)},
              {"pl", static_cast<int32_t>(d.placement)}};
}

TensorDesc DescFromJson(const Json& j) {
  TensorDesc d;
  d.shape = StorageShape(Shape(j.at("o").get<std::vector<int64_t>>()), Shape(j.at("s").get<std::vector<int64_t>>()));
  const std::string x = j.at("x").get<std::string>();
  d.format = StorageFormat(static_cast<Format>(j.at("of").get<int32_t>()), static_cast<Format>(j.at("sf").get<int32_t>()),
                           x.empty() ? ExpandDimsType() : ExpandDimsType(x));
  d.data_type = static_cast<DataType>(j.at("dt").get<int32_t>());
  d.placement = static_cast<TensorPlacement>(j.at("pl").get<int32_t>());
  return d;
}

Json AttrValueToJson(const AttrValue& v) {
  Json j;
  j["t"] = static_cast<int>(v.index());
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, TensorAttr>) {
          if (!x) {
            j["v"] = nullptr;
          } else {
            const auto* b = static_cast<const uint8_t*>(x->GetAddr());
            j["v"] = Json{{"d", DescToJson(x->Desc())},
                          {"b", Json::binary(std::vector<uint8_t>(b, b == nullptr ? b : b + x->GetSize()))}};
          }
        } else if constexpr (std::is_same_v<T, DataType>) {
          j["v"] = static_cast<int32_t>(x);
        } else if constexpr (std::is_same_v<T, std::vector<DataType>>) {
          std::vector<int32_t> n;
          for (DataType d : x) n.push_back(static_cast<int32_t>(d));
          j["v"] = n;
        } else {
          j["v"] = x;
        }
      },
      v);
  return j;
}

AttrValue AttrValueFromJson(const Json& j) {
  const Json& v = j.at("v");
  switch (static_cast<AttrType>(j.at("t").get<int>())) {
    case AttrType::VT_INT: return v.get<int64_t>();
    case AttrType::VT_FLOAT: return v.get<float>();
    case AttrType::VT_BOOL: return v.get<bool>();
    case AttrType::VT_STRING: return v.get<std::string>();
    case AttrType::VT_DATA_TYPE: return static_cast<DataType>(v.get<int32_t>());
    case AttrType::VT_TENSOR: {
      if (v.is_null()) return TensorAttr{};
      const auto& bytes = v.at("b").get_binary();
      Tensor t = Tensor::Allocate(DescFromJson(v.at("d")));
      if (!bytes.empty()) std::memcpy(t.GetAddr(), bytes.data(), std::min(bytes.size(), t.GetSize()));
      return std::make_shared<const Tensor>(std::move(t));
    }
    case AttrType::VT_LIST_INT: return v.get<std::vector<int64_t>>();
    case AttrType::VT_LIST_FLOAT: return v.get<std::vector<float>>();
    case AttrType::VT_LIST_BOOL: return v.get<std::vector<bool>>();
    case AttrType::VT_LIST_STRING: return v.get<std::vector<std::string>>();
    case AttrType::VT_LIST_DATA_TYPE: {
      std::vector<DataType> out;
      for (int32_t d : v.get<std::vector<int32_t>>()) out.push_back(static_cast<DataType>(d));
      return out;
    }
    case AttrType::VT_LIST_LIST_INT: return v.get<std::vector<std::vector<int64_t>>>();
  }
  throw std::invalid_argument("attribute kind " + j.at("t").dump() + " is not one of the 12 IR kinds");
}

Json AttrsToJson(const RuntimeAttrs& attrs) {
  Json a = Json::array();
  for (const auto& v : attrs.Values()) a.push_back(AttrValueToJson(v));
  return a;
}

RuntimeAttrs AttrsFromJson(const Json& j) {
  std::vector<AttrValue> values;
  for (const auto& v : j) values.push_back(AttrValueFromJson(v));
  return RuntimeAttrs(std::move(values));
}

namespace {
Json DtypesToJson(const IrDataTypes& d) {
  std::vector<int32_t> allowed;
  for (DataType t : d.allowed) allowed.push_back(static_cast<int32_t>(t));
  return Json{{"a", allowed}, {"s", d.symbol}, {"u", d.uniform}};
}
IrDataTypes DtypesFromJson(const Json& j) {
  IrDataTypes d;
  for (int32_t t : j.at("a").get<std::vector<int32_t>>()) d.allowed.push_back(static_cast<DataType>(t));
  d.symbol = j.at("s").get<std::string>();
  d.uniform = j.at("u").get<bool>();
  return d;
}
}  // namespace

Json SchemaToJson(const OpSchema& s) {
  Json j{{"op_type", s.op_type}, {"inputs", Json::array()}, {"outputs", Json::array()}, {"attrs", Json::array()},
         {"aliases", Json::array()}};
  for (const auto& i : s.inputs) j["inputs"].push_back({{"n", i.name}, {"k", static_cast<int>(i.kind)}, {"d", DtypesToJson(i.dtypes)}});
  for (const auto& o : s.outputs) j["outputs"].push_back({{"n", o.name}, {"k", static_cast<int>(o.kind)}, {"d", DtypesToJson(o.dtypes)}});
  for (const auto& a : s.attrs) {
    j["attrs"].push_back({{"n", a.name}, {"t", static_cast<int>(a.type)},
                          {"d", a.default_value ? AttrValueToJson(*a.default_value) : Json()}});
  }
  for (const auto& [in, out] : s.aliases) j["aliases"].push_back({in, out});
  return j;
}

std::shared_ptr<const OpSchema> SchemaFromJson(const Json& j) {
  auto s = std::make_shared<OpSchema>();
  s->op_type = j.at("op_type").get<std::string>();
  for (const auto& i : j.at("inputs")) {
    s->inputs.push_back(IrInput{i.at("n").get<std::string>(), static_cast<IrInputKind>(i.at("k").get<int>()), DtypesFromJson(i.at("d"))});
  }
  for (const auto& o : j.at("outputs")) {
    s->outputs.push_back(IrOutput{o.at("n").get<std::string>(), static_cast<IrOutputKind>(o.at("k").get<int>()), DtypesFromJson(o.at("d"))});
  }
  for (const auto& a : j.at("attrs")) {
    IrAttr attr{a.at("n").get<std::string>(), static_cast<AttrType>(a.at("t").get<int>()), std::nullopt};
    if (!a.at("d").is_null()) attr.default_value = AttrValueFromJson(a.at("d"));
    s->attrs.push_back(std::move(attr));
  }
  for (const auto& p : j.at("aliases")) s->aliases.emplace_back(p.at(0).get<std::size_t>(), p.at(1).get<std::size_t>());
  return s;
}

Json StatusToJson(const Status& s) {
  if (s.ok()) return Json();
  const ErrorInfo& e = s.info();
  return Json{{"message", e.message}, {"plugin", e.plugin}, {"file", e.file}, {"call_site", e.call_site},
              {"exception_type", e.exception_type}, {"location", e.location}, {"location_file", e.location_file},
              {"location_line", e.location_line}, {"kind", e.kind}, {"traceback", e.traceback}};
}

Status StatusFromJson(const Json& j) {
  if (j.is_null()) return Status::Ok();
  ErrorInfo e;
  e.message = j.value("message", "");
  e.plugin = j.value("plugin", "");
  e.file = j.value("file", "");
  e.call_site = j.value("call_site", "");
  e.exception_type = j.value("exception_type", "");
  e.location = j.value("location", "");
  e.location_file = j.value("location_file", "");
  e.location_line = j.value("location_line", 0);
  e.kind = j.value("kind", "");
  e.traceback = j.value("traceback", "");
  return Status::Error(std::move(e));
}

}  // namespace ge::host::wire
