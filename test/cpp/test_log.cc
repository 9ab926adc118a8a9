// ge/log.h: log levels and the engine's LogSink (the public, spdlog-free API),
// fed by the project's spdlog loggers (ge/log_spdlog.h).
#define BOOST_TEST_MODULE log
#include <boost/test/unit_test.hpp>

#include <mutex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "ge/log.h"
#include "ge/log_spdlog.h"

namespace {

class Capture final : public ge::LogSink {
 public:
  void Write(ge::LogLevel level, std::string_view component, std::string_view message) override {
    std::lock_guard<std::mutex> lock(mu);
    lines.emplace_back(level, std::string(component), std::string(message));
  }
  void Flush() override { ++flushes; }
  std::mutex mu;
  std::vector<std::tuple<ge::LogLevel, std::string, std::string>> lines;
  int flushes = 0;
};

// Restores the default sink and level after each test.
struct Restore {
  ~Restore() {
    ge::SetLogSink(nullptr);
    ge::SetLogLevel(ge::LogLevel::kWarn);
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(level_names_parse_and_print_back) {
  for (auto l : {ge::LogLevel::kTrace, ge::LogLevel::kDebug, ge::LogLevel::kInfo, ge::LogLevel::kWarn,
                 ge::LogLevel::kError, ge::LogLevel::kCritical, ge::LogLevel::kOff}) {
    BOOST_CHECK(ge::ParseLogLevel(ge::LogLevelName(l)) == l);
  }
  BOOST_CHECK(ge::ParseLogLevel("warning") == ge::LogLevel::kWarn);
  BOOST_CHECK(!ge::ParseLogLevel("loud"));
  BOOST_CHECK(!ge::ParseLogLevel("WARN"));
}

BOOST_AUTO_TEST_CASE(an_installed_sink_gets_component_level_and_escaped_text) {
  Restore restore;
  auto sink = std::make_shared<Capture>();
  ge::SetLogSink(sink);
  ge::SetLogLevel(ge::LogLevel::kInfo);
  BOOST_CHECK(ge::CurrentLogLevel() == ge::LogLevel::kInfo);
  ge::Logger("test-log")->info("hello {}\x1b[31m", 42);
  ge::Logger("test-log")->debug("below the level");
  ge::Logger("test-log")->flush();
  BOOST_REQUIRE_EQUAL(sink->lines.size(), 1u);
  const auto& [level, component, message] = sink->lines[0];
  BOOST_CHECK(level == ge::LogLevel::kInfo);
  BOOST_CHECK_EQUAL(component, "test-log");
  BOOST_CHECK_EQUAL(message.rfind("hello 42", 0), 0u);
  BOOST_CHECK_MESSAGE(message.find('\x1b') == std::string::npos, "escape not escaped: " << message);
  BOOST_CHECK_EQUAL(sink->flushes, 1);
}

BOOST_AUTO_TEST_CASE(the_level_applies_to_loggers_made_before_and_after) {
  Restore restore;
  auto sink = std::make_shared<Capture>();
  ge::SetLogSink(sink);
  auto before = ge::Logger("test-before");
  ge::SetLogLevel(ge::LogLevel::kError);
  before->warn("dropped");
  ge::Logger("test-after")->warn("dropped too");
  ge::Logger("test-after")->error("kept");
  BOOST_REQUIRE_EQUAL(sink->lines.size(), 1u);
  BOOST_CHECK_EQUAL(std::get<2>(sink->lines[0]), "kept");
  ge::SetLogLevel(ge::LogLevel::kOff);
  before->critical("off drops everything");
  BOOST_CHECK_EQUAL(sink->lines.size(), 1u);
}

BOOST_AUTO_TEST_CASE(removing_the_sink_stops_delivery) {
  Restore restore;
  auto sink = std::make_shared<Capture>();
  ge::SetLogSink(sink);
  ge::SetLogLevel(ge::LogLevel::kCritical);
  ge::Logger("test-remove")->critical("to the sink");
  ge::SetLogSink(nullptr);
  ge::Logger("test-remove")->critical("to stderr (expected in the test output)");
  BOOST_CHECK_EQUAL(sink->lines.size(), 1u);
}

BOOST_AUTO_TEST_CASE(an_unknown_option_value_is_a_usage_error) {
  Restore restore;
  std::ostringstream err;
  BOOST_CHECK(!ge::ApplyLogLevelOption("loud", "tool", err));
  BOOST_CHECK_EQUAL(err.str(), "tool: unknown --log-level 'loud' (trace, debug, info, warn, error, critical, off)\n");
  BOOST_CHECK(ge::ApplyLogLevelOption("debug", "tool", err));
  BOOST_CHECK(ge::CurrentLogLevel() == ge::LogLevel::kDebug);
}
