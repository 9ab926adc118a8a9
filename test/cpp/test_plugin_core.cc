// The core's plugin pieces without Python: discovery rules, stamps, the path
// spelling and the plugin record's JSON.
#define BOOST_TEST_MODULE plugin_core
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/filesystem.hpp>

#include "ge/crash_report.h"
#include "ge/plugin/cache.h"
#include "ge/plugin/op_library.h"
#include "ge/hash.h"
#include "ge/plugin/discovery.h"
#include "ge/plugin/record.h"
#include "ge/plugin/resolve.h"
#include "ge/text.h"

namespace fs = boost::filesystem;
using namespace ge;
using namespace ge::plugin;

namespace {

struct TempDir {
  fs::path dir;
  TempDir() {
    dir = fs::temp_directory_path() / fs::unique_path("ge-core-%%%%-%%%%");
    fs::create_directories(dir);
    ::chmod(dir.c_str(), 0755);
    dir = fs::canonical(dir);
  }
  ~TempDir() {
    boost::system::error_code ec;
    fs::remove_all(dir, ec);
  }
  fs::path Write(const std::string& rel, const std::string& text = "X = 1\n", mode_t mode = 0644) const {
    const fs::path p = dir / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p.string()) << text;
    ::chmod(p.c_str(), mode);
    return p;
  }
};

DiscoverOptions Opts() {
  DiscoverOptions o;
  o.uid = ::geteuid();
  return o;
}

const Candidate* Find(const Discovery& d, const std::string& name) {
  for (const auto& c : d.plugins) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

const PluginRecord* Problem(const Discovery& d, const std::string& name) {
  for (const auto& r : d.problems) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

}  // namespace

BOOST_AUTO_TEST_CASE(path_text_is_lossless_and_one_spelling) {
  const std::string raw = std::string("/o\xff/caf\xc3\xa9\\x41/a\xfe.py");
  const std::string text = PathText(raw);
  BOOST_CHECK_EQUAL(text, "/o\\xff/caf\xc3\xa9\\\\x41/a\\xfe.py");
  BOOST_REQUIRE(ParsePathText(text).has_value());
  BOOST_CHECK(*ParsePathText(text) == raw);
  BOOST_CHECK_EQUAL(PathText("/plain/path.py"), "/plain/path.py");  // almost all paths: unchanged
  BOOST_CHECK(!ParsePathText("a\\").has_value());     // a lone backslash
  BOOST_CHECK(!ParsePathText("a\\xg0").has_value());  // a bad escape
  // Overlong forms and surrogates are not valid UTF-8: escaped byte by byte.
  BOOST_CHECK_EQUAL(PathText("\xc0\xaf"), "\\xc0\\xaf");
  BOOST_CHECK_EQUAL(PathText("\xed\xa0\x80"), "\\xed\\xa0\\x80");
}

BOOST_AUTO_TEST_CASE(discovery_names_plugins_by_their_own_entry) {
  TempDir t;
  t.Write("opp/_impl_d.py");
  fs::create_symlink("_impl_d.py", t.dir / "opp" / "d.py");
  t.Write("opp/pk/__init__.py");
  t.Write("opp/_helper.py");
  t.Write("opp/.hidden.py");
  t.Write("opp/not_a_plugin.txt");
  t.Write("opp/bad-name.py");
  const Discovery d = Discover({(t.dir / "opp").string()}, Opts());
  BOOST_REQUIRE(Find(d, "d") != nullptr);
  BOOST_CHECK_EQUAL(Find(d, "d")->path, (t.dir / "opp" / "d.py").string());
  BOOST_CHECK_EQUAL(Find(d, "d")->real_path, (t.dir / "opp" / "_impl_d.py").string());
  BOOST_CHECK(Find(d, "d")->insecure.empty());
  BOOST_REQUIRE(Find(d, "pk") != nullptr);
  BOOST_CHECK(Find(d, "pk")->is_package);
  BOOST_CHECK(Find(d, "_impl_d") == nullptr && Find(d, "_helper") == nullptr && Find(d, ".hidden") == nullptr);
  BOOST_REQUIRE(Problem(d, "bad-name") != nullptr);
  BOOST_CHECK_EQUAL(Problem(d, "bad-name")->status, PluginStatus::kError);
  BOOST_CHECK(Problem(d, "bad-name")->error.message.find("not a valid Python module name") != std::string::npos);
  // The single-file plugin's helpers are its folder's underscore modules.
  BOOST_REQUIRE(Find(d, "d")->helpers != nullptr);
  BOOST_CHECK_EQUAL(Find(d, "d")->helpers->paths.size(), 2u);  // _helper.py, _impl_d.py
}

// The opp folder is listed by name (readdir, discovery.cc): byte order of the
// names, the extension from the last dot, helpers from the underscore names.
BOOST_AUTO_TEST_CASE(discovery_lists_an_opp_folder_in_name_order_by_extension) {
  TempDir t;
  for (const char* n : {"p2.py", "p10.py", "p1.py", "Zed.py"}) t.Write(std::string("opp/") + n);
  t.Write("opp/a.b.py");          // module name "a.b": not importable
  t.Write("opp/upper.PY");        // not ".py": not a plugin
  t.Write("opp/noext");           // a file without extension: not a plugin
  fs::create_directories(t.dir / "opp" / "folder");  // no __init__.py: not a plugin
  t.Write("opp/pkg.v2/__init__.py");  // a package whose name is no module name
  t.Write("opp/_h.py");
  fs::create_directories(t.dir / "opp" / "__pycache__");
  const Discovery d = Discover({(t.dir / "opp").string()}, Opts());
  std::vector<std::string> names;
  for (const auto& c : d.plugins) names.push_back(c.name);
  const std::vector<std::string> want{"Zed", "p1", "p10", "p2"};
  BOOST_CHECK_EQUAL_COLLECTIONS(names.begin(), names.end(), want.begin(), want.end());
  for (const auto& c : d.plugins) {
    BOOST_CHECK_EQUAL(c.path, (t.dir / "opp" / (c.name + ".py")).string());
    BOOST_CHECK_EQUAL(c.real_path, c.path);
    BOOST_REQUIRE(c.helpers != nullptr);
    BOOST_CHECK_EQUAL(c.helpers->paths.size(), 1u);  // _h.py; never __pycache__
    BOOST_REQUIRE(c.entry_stat.has_value());        // from the one lstat of the listing
  }
  BOOST_REQUIRE(Problem(d, "a.b") != nullptr);
  BOOST_CHECK(Problem(d, "a.b")->error.message.find("not a valid Python module name") != std::string::npos);
  BOOST_REQUIRE(Problem(d, "pkg.v2") != nullptr);
  BOOST_CHECK_EQUAL(Problem(d, "pkg.v2")->path, (t.dir / "opp" / "pkg.v2").string());
  BOOST_CHECK_EQUAL(d.problems.size(), 2u);  // upper.PY, noext and folder/ are not plugins
}

BOOST_AUTO_TEST_CASE(discovery_reports_dangling_links_name_conflicts_and_duplicates) {
  TempDir t;
  t.Write("a/p.py");
  t.Write("b/p.py");
  fs::create_directories(t.dir / "a");
  fs::create_symlink("gone.py", t.dir / "a" / "c.py");
  const Discovery d = Discover({(t.dir / "a").string(), (t.dir / "b").string(), (t.dir / "a").string()}, Opts());
  BOOST_REQUIRE_EQUAL(d.plugins.size(), 1u);  // a/p.py (the folder listed twice gives it once)
  BOOST_CHECK_EQUAL(d.plugins[0].path, (t.dir / "a" / "p.py").string());
  const PluginRecord* c = Problem(d, "c");
  BOOST_REQUIRE(c != nullptr);
  BOOST_CHECK_EQUAL(c->status, PluginStatus::kMissing);
  BOOST_CHECK(c->error.message.find("symbolic link to gone.py") != std::string::npos);
  const PluginRecord* p = Problem(d, "p");
  BOOST_REQUIRE(p != nullptr);
  BOOST_CHECK_EQUAL(p->status, PluginStatus::kConflict);
  BOOST_CHECK_EQUAL(p->path, (t.dir / "b" / "p.py").string());
  BOOST_CHECK_EQUAL(p->conflicts_with, (t.dir / "a" / "p.py").string());
  // A link to a sibling plugin is the same file under another entry: reported.
  fs::create_symlink("p.py", t.dir / "a" / "q.py");
  const Discovery again = Discover({(t.dir / "a").string()}, Opts());
  const PluginRecord* q = Problem(again, "q");
  BOOST_REQUIRE(q != nullptr);
  BOOST_CHECK_EQUAL(q->status, PluginStatus::kConflict);
  BOOST_CHECK(q->error.message.find("is the same file as") != std::string::npos);
  // A trailing slash names the same folder.
  BOOST_CHECK_EQUAL(Discover({(t.dir / "a").string() + "/"}, Opts()).plugins.size(), 1u);
}

BOOST_AUTO_TEST_CASE(discovery_gives_the_safety_verdict) {
  TempDir t;
  t.Write("opp/ok.py");
  t.Write("opp/open.py", "X = 1\n", 0666);
  t.Write("outside/far.py");
  fs::create_symlink(t.dir / "outside" / "far.py", t.dir / "opp" / "far.py");
  const Discovery d = Discover({(t.dir / "opp").string()}, Opts());
  BOOST_CHECK(Find(d, "ok")->insecure.empty());
  BOOST_CHECK(Find(d, "open")->insecure.find("writable by others") != std::string::npos);
  BOOST_CHECK(Find(d, "far")->insecure.find("outside its opp folder") != std::string::npos);
  DiscoverOptions no_check = Opts();
  no_check.check_safety = false;
  BOOST_CHECK(Find(Discover({(t.dir / "opp").string()}, no_check), "open")->insecure.empty());
}

BOOST_AUTO_TEST_CASE(discover_one_takes_a_package_folder_as_one_plugin) {
  TempDir t;
  t.Write("opp/pk/__init__.py");
  t.Write("opp/pk/helpers.py");
  const Discovery one = DiscoverOne((t.dir / "opp" / "pk").string(), Opts());
  BOOST_REQUIRE_EQUAL(one.plugins.size(), 1u);
  BOOST_CHECK(one.plugins[0].is_package && one.plugins[0].name == "pk");
  const Discovery folder = DiscoverOne((t.dir / "opp").string(), Opts());
  BOOST_CHECK(folder.plugins.empty());
  BOOST_REQUIRE_EQUAL(folder.problems.size(), 1u);
  BOOST_CHECK(folder.problems[0].error.message.find("is not one plugin") != std::string::npos);
  BOOST_CHECK(IsPackageFolder((t.dir / "opp" / "pk").string()) && !IsPackageFolder((t.dir / "opp").string()));
}

BOOST_AUTO_TEST_CASE(a_stamp_sees_an_edit_that_keeps_size_and_mtime) {
  TempDir t;
  const fs::path p = t.Write("opp/p.py", "OP = 'Old'\n");
  t.Write("opp/_h.py", "V = 1\n");
  const Candidate c = *Find(Discover({(t.dir / "opp").string()}, Opts()), "p");
  const Stamp before = ComputeStamp(c, true);
  struct stat st {};
  ::stat(p.c_str(), &st);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a later ctime
  std::ofstream(p.string()) << "OP = 'New'\n";
  const timespec times[2] = {st.st_atim, st.st_mtim};
  ::utimensat(AT_FDCWD, p.c_str(), times, 0);
  const Stamp after = ComputeStamp(c, true);
  BOOST_CHECK_EQUAL(after.size, before.size);
  BOOST_CHECK_EQUAL(after.mtime_ns, before.mtime_ns);
  BOOST_CHECK(!after.SameMeta(before));
  BOOST_CHECK(!StillFresh(c, before));
  BOOST_CHECK(StillFresh(c, after));
  // A helper's edit changes the plugin's stamp too.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  t.Write("opp/_h.py", "V = 2\n");
  BOOST_CHECK(!StillFresh(c, after));
  // A touch without a content change keeps it fresh (the hash decides).
  const Stamp now = ComputeStamp(c, true);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::utimensat(AT_FDCWD, p.c_str(), nullptr, 0);
  BOOST_CHECK(!ComputeStamp(c, false).SameMeta(now));
  BOOST_CHECK(StillFresh(c, now));
}

BOOST_AUTO_TEST_CASE(a_record_round_trips_through_json) {
  PluginRecord r;
  r.name = "p";
  r.path = "/o\xff/p.py";
  r.version = "1.0";
  r.isolation = "subinterpreter";
  r.status = PluginStatus::kError;
  r.error.kind = ge::plugin::ErrorKind::kImport;
  r.error.exception = "SyntaxError";
  r.error.message = "/o\xff/p.py: SyntaxError: invalid syntax";
  r.error.file = "/o\xff/p.py";
  r.error.line = 3;
  r.error.traceback = "Traceback ...";
  r.stamp = Stamp{1, 2, 3, 4, 5, "abc"};
  const nlohmann::json j = ToJson(r);
  BOOST_CHECK_EQUAL(j["path"].get<std::string>(), "/o\\xff/p.py");
  BOOST_CHECK_EQUAL(j["error_line"].get<int>(), 3);
  std::string why;
  const auto back = FromJson(j, &why, /*stamp_required=*/true);
  BOOST_REQUIRE_MESSAGE(back.has_value(), why);
  BOOST_CHECK(back->path == r.path);
  BOOST_CHECK(back->error.file == r.error.file);
  BOOST_CHECK(back->error.kind == ge::plugin::ErrorKind::kImport);
  BOOST_CHECK_EQUAL(back->error.exception, "SyntaxError");
  BOOST_CHECK_EQUAL(back->status, PluginStatus::kError);
  BOOST_CHECK(back->stamp->SameMeta(*r.stamp) && back->stamp->hash == "abc");
  // The one-line error is stable through a round trip (no second "(at ...)").
  BOOST_CHECK_EQUAL(ToJson(*back)["error"], j["error"]);
  BOOST_CHECK(back->error.op_type.empty() && !j.contains("error_op_type"));
  // A missing prototype's op_type, and a Python plugin's unimplemented prototypes.
  r.error.kind = ge::plugin::ErrorKind::kPrototype;
  r.error.op_type = "Half\xc3\xa9";
  r.prototypes = {"OnlyProto", "Other"};
  const auto again = FromJson(ToJson(r), &why, true);
  BOOST_REQUIRE_MESSAGE(again.has_value(), why);
  BOOST_CHECK_EQUAL(again->error.op_type, r.error.op_type);
  BOOST_CHECK(again->prototypes == r.prototypes && !again->op_library);
  BOOST_CHECK(!FromJson({{"path", "/p.py"}, {"status", "error"}, {"error_op_type", 3}}, &why));
  BOOST_CHECK_MESSAGE(why.find("error_op_type") != std::string::npos, why);
}

BOOST_AUTO_TEST_CASE(error_kinds_and_conflict_rules_are_a_closed_set_in_json) {
  using namespace ge::plugin;
  // Every kind has one JSON name and comes back from it; a Python
  // exception's __ge_kind__ maps only onto the kinds ge's modules set.
  const ErrorKind all[] = {ErrorKind::kDiscovery, ErrorKind::kMetadata,   ErrorKind::kName,     ErrorKind::kExtension,
                           ErrorKind::kImport,    ErrorKind::kValidation, ErrorKind::kPrototype, ErrorKind::kConflict,
                           ErrorKind::kInsecure,  ErrorKind::kSkipped,    ErrorKind::kLoad,     ErrorKind::kScan,
                           ErrorKind::kBusyThread};
  std::set<std::string_view> names;
  for (ErrorKind k : all) {
    BOOST_TEST_CONTEXT(ErrorKindName(k)) {
      BOOST_CHECK(!ErrorKindName(k).empty());
      names.insert(ErrorKindName(k));
      BOOST_CHECK(ParseErrorKind(ErrorKindName(k)) == k);
      PluginRecord r = ProblemRecord("p", "/o/p.py", PluginStatus::kError, k, "/o/p.py: failed");
      std::string why;
      const auto back = FromJson(ToJson(r), &why);
      BOOST_REQUIRE_MESSAGE(back, why);
      BOOST_CHECK(back->error.kind == k);
    }
  }
  BOOST_CHECK_EQUAL(names.size(), std::size(all));
  BOOST_CHECK(KindFromPython("extension", ErrorKind::kImport) == ErrorKind::kExtension);
  BOOST_CHECK(KindFromPython("prototype", ErrorKind::kImport) == ErrorKind::kPrototype);
  BOOST_CHECK(KindFromPython("conflict", ErrorKind::kImport) == ErrorKind::kImport);  // not a plugin's to claim
  BOOST_CHECK(KindFromPython("", ErrorKind::kValidation) == ErrorKind::kValidation);
  std::string why;
  BOOST_CHECK(!FromJson({{"path", "/p.py"}, {"status", "error"}, {"error_kind", "gossip"}}, &why));
  BOOST_CHECK_MESSAGE(why.find("field 'error_kind' has an unknown value 'gossip'") != std::string::npos, why);
  BOOST_CHECK(!FromJson({{"path", "/p.py"}, {"status", "error"}, {"error_kind", ""}}, &why));
  BOOST_CHECK_MESSAGE(why.find("field 'error_kind' has an unknown value ''") != std::string::npos, why);

  // A conflict's rule travels with it, and the message is made again from
  // the typed fields (a path's non-UTF-8 byte comes back as the byte).
  for (ConflictRule rule : {ConflictRule::kPathOrder, ConflictRule::kBuiltin, ConflictRule::kFirstLibrary,
                            ConflictRule::kLibraryOverPython}) {
    BOOST_TEST_CONTEXT(rule) {
      BOOST_CHECK(ParseConflictRule(ConflictRuleName(rule)) == rule);
      PluginRecord c = ProblemRecord("b", "/o\xff/b.py", PluginStatus::kConflict, ErrorKind::kConflict, "");
      c.path = "/oÿ/b.py";
      c.error.rule = rule;
      c.error.op_type = "Gelu";
      c.conflicts_with = "/o/a.py";
      c.error.message = ConflictMessage("Gelu", c.path, c.conflicts_with, rule);
      const nlohmann::json j = ToJson(c);
      BOOST_CHECK_EQUAL(j["conflict_rule"].get<std::string>(), std::string(ConflictRuleName(rule)));
      const auto back = FromJson(j, &why);
      BOOST_REQUIRE_MESSAGE(back, why);
      BOOST_CHECK(back->error.rule == rule);
      BOOST_CHECK(back->error.message == c.error.message);
      BOOST_CHECK_EQUAL(ToJson(*back).dump(), j.dump());
    }
  }
  PluginRecord c = ProblemRecord("b", "/o/b.py", PluginStatus::kConflict, ErrorKind::kConflict, "");
  c.error.rule = ConflictRule::kPathOrder;
  c.error.op_type = "Gelu";
  c.conflicts_with = "/o/a.py";
  c.error.message = ConflictMessage("Gelu", c.path, c.conflicts_with, c.error.rule);
  const nlohmann::json good = ToJson(c);
  BOOST_REQUIRE(FromJson(good, &why));
  nlohmann::json bad = good;
  bad["conflict_rule"] = "loudest_wins";
  BOOST_CHECK(!FromJson(bad, &why));
  BOOST_CHECK_MESSAGE(why.find("field 'conflict_rule' has an unknown value 'loudest_wins'") != std::string::npos, why);
  // A rule that is not the message's reason, or on an error of another kind, is refused.
  for (auto edit : std::vector<std::function<void(nlohmann::json&)>>{
           [](nlohmann::json& b) { b["conflict_rule"] = "first_library"; },
           [](nlohmann::json& b) { b["error_kind"] = "import"; },
           [](nlohmann::json& b) { b.erase("error_op_type"); },
           [](nlohmann::json& b) { b["conflicts_with"] = "/o/z.py"; },
       }) {
    bad = good;
    edit(bad);
    BOOST_CHECK(!FromJson(bad, &why));
    BOOST_CHECK_MESSAGE(why.find("field 'conflict_rule' does not agree with the record's conflict") != std::string::npos,
                        why);
  }
}

BOOST_AUTO_TEST_CASE(release_rules_and_unprototyped_ops_round_trip_through_the_detailed_json) {
  PluginRecord r;
  r.name = "rel";
  r.path = "/o/rel.py";
  r.isolation = "process";
  r.status = PluginStatus::kOk;
  OpRecord op;
  op.op_type = "RelCtx";
  op.capabilities = {"eager_execute"};
  op.rules = "9.2.0-beta.2";
  op.newest_refusal = "invalid execute signature for op type RelCtx: expected None return annotation";
  r.ops.push_back(op);
  OpRecord lone = op;
  lone.op_type = "RelLone";
  lone.rules = "9.2.0-beta.1";
  r.unprototyped.push_back(lone);
  const nlohmann::json detail = ToJson(r);
  BOOST_CHECK_EQUAL(detail["ops"][0]["rules"], "9.2.0-beta.2");
  BOOST_CHECK_EQUAL(detail["unprototyped"][0]["op_type"], "RelLone");
  // The listing's summary names the op without a prototype; rules are detail.
  const nlohmann::json summary = ToJson(r, /*with_detail=*/false);
  BOOST_CHECK(!summary["ops"][0].contains("rules"));
  BOOST_CHECK(summary["unprototyped"] == nlohmann::json::array({{{"op_type", "RelLone"}, {"capabilities", {"eager_execute"}}}}));
  std::string why;
  const auto back = FromJson(detail, &why);
  BOOST_REQUIRE_MESSAGE(back.has_value(), why);
  BOOST_CHECK_EQUAL(back->ops.at(0).rules, op.rules);
  BOOST_CHECK_EQUAL(back->ops.at(0).newest_refusal, op.newest_refusal);
  BOOST_REQUIRE_EQUAL(back->unprototyped.size(), 1u);
  BOOST_CHECK_EQUAL(back->unprototyped[0].op_type, "RelLone");
  BOOST_CHECK_EQUAL(back->unprototyped[0].rules, "9.2.0-beta.1");
  // A rules name that no release has is refused, naming the field.
  nlohmann::json bad = detail;
  bad["unprototyped"][0]["rules"] = "9.3";
  BOOST_CHECK(!FromJson(bad, &why));
  BOOST_CHECK_MESSAGE(why.find("unprototyped[0]: field 'rules' has an unknown value '9.3'") != std::string::npos, why);
  // The one wording of an implementation without a prototype names plugin, file and op_type.
  const std::string note = ge::plugin::UnprototypedNote("rel", "/o/rel.py", "RelLone");
  BOOST_CHECK_MESSAGE(note.find("plugin 'rel' (/o/rel.py) implements op_type 'RelLone'") == 0, note);
  BOOST_CHECK_MESSAGE(note.find("register_op(op_type='RelLone')") != std::string::npos, note);
}

BOOST_AUTO_TEST_CASE(a_split_prototype_note_is_one_wording) {
  const std::string one = ge::plugin::SplitPrototypeNote("X", {{"p", "/o/p.py"}});
  BOOST_CHECK_EQUAL(one, "the prototype of op_type 'X' is registered by plugin 'p' (/o/p.py), another plugin: " +
                             std::string(ge::plugin::kSplitAdvice));
  const std::string two = ge::plugin::SplitPrototypeNote("X", {{"p", "/o/p.py"}, {"q", "/o/q.py"}});
  BOOST_CHECK_MESSAGE(two.find("plugin 'p' (/o/p.py) and plugin 'q' (/o/q.py), other plugins: ") != std::string::npos, two);
}

namespace {

// One diagnostic of each kind, with the words each kind has always had.
std::vector<std::pair<ge::plugin::Diagnostic, std::string>> EveryKind() {
  using namespace ge::plugin;
  return {
      {PrototypeReplaced("Gelu", "acts", "/o/acts.py", "/o/libops.so"),
       "the Python prototype of op_type 'Gelu' in plugin 'acts' (/o/acts.py) replaces the C++ prototype from op "
       "library /o/libops.so"},
      {PrototypeUnused("Gelu", "acts", "/o/acts.py", "/o/libcustom.so"),
       "the Python prototype of op_type 'Gelu' in plugin 'acts' (/o/acts.py) is not used: op library "
       "/o/libcustom.so implements op_type 'Gelu' as a C++ custom op with its own C++ prototype"},
      {LibraryPrototypeShadowed("Gelu", "/o/libb.so", "/o/liba.so"),
       "the prototype of op_type 'Gelu' from /o/libb.so is not used: op library /o/liba.so registered it first"},
      {ReleaseRules("Gelu", "/o/acts.py", "execute(self, input): Use 'ctx' for EagerOpExecutionContext"),
       "/o/acts.py: execute(self, input): Use 'ctx' for EagerOpExecutionContext"},
      {SplitPrototype("Gelu", {{"protos", "/o/protos.py"}}), SplitPrototypeNote("Gelu", {{"protos", "/o/protos.py"}})},
      {Unprototyped("Gelu", "acts", "/o/acts.py"), UnprototypedNote("acts", "/o/acts.py", "Gelu")},
      {UnprototypedSplit("Gelu", "acts", "/o/acts.py", {{"protos", "/o/protos.py"}}),
       UnprototypedSplitNote("acts", "/o/acts.py", "Gelu", {{"protos", "/o/protos.py"}})},
      {PrototypeOnly("Gelu", "protos", "/o/protos.py"),
       "plugin 'protos' (/o/protos.py) registers its prototype (register_op) but no loaded plugin implements it "
       "(register_op_impl); " +
           std::string(kSplitAdvice)},
  };
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_diagnostic_kind_round_trips_and_its_text_agrees_in_every_output) {
  using namespace ge::plugin;
  std::set<std::string> kinds;
  for (const auto& [d, words] : EveryKind()) {
    BOOST_TEST_CONTEXT(KindName(d.kind)) {
      kinds.insert(std::string(KindName(d.kind)));
      BOOST_CHECK_EQUAL(Text(d), words);
      BOOST_CHECK(ParseDiagnosticKind(KindName(d.kind)) == d.kind);
      const nlohmann::json j = ToJson(d);
      BOOST_CHECK_EQUAL(j["text"].get<std::string>(), words);
      std::string why;
      std::optional<Diagnostic> back = DiagnosticFromJson(j, &why);
      BOOST_REQUIRE_MESSAGE(back, why);
      BOOST_CHECK(*back == d);
      // In a record: a warning's text is in "warnings", its fields in
      // "diagnostics"; a split note is in "error" after the message, its
      // fields in "error_notes"; both come back typed (a cache, a scanner).
      PluginRecord r = ProblemRecord("acts", "/o/acts.py", PluginStatus::kError, ge::plugin::ErrorKind::kPrototype,
                                     "/o/acts.py: canonical IR not found for schema-bound execute: Gelu");
      r.error.op_type = "Gelu";
      r.error.file = "/o/acts.py";
      r.error.line = 7;
      r.warnings.push_back(d);
      r.error.notes.push_back(d);
      const nlohmann::json rj = ToJson(r);
      BOOST_CHECK_EQUAL(rj["warnings"][0].get<std::string>(), words);
      BOOST_CHECK_EQUAL(rj["diagnostics"][0]["text"].get<std::string>(), words);
      BOOST_CHECK_EQUAL(rj["error"].get<std::string>(), r.error.message + "; " + words + " (at /o/acts.py:7)");
      BOOST_CHECK_EQUAL(rj["error_message"].get<std::string>(), r.error.message);
      std::optional<PluginRecord> rback = FromJson(rj, &why);
      BOOST_REQUIRE_MESSAGE(rback, why);
      BOOST_REQUIRE_EQUAL(rback->warnings.size(), 1u);
      BOOST_CHECK(rback->warnings[0] == d);
      BOOST_REQUIRE_EQUAL(rback->error.notes.size(), 1u);
      BOOST_CHECK(rback->error.notes[0] == d);
      // Written again, nothing is said twice (no note, no location).
      BOOST_CHECK_EQUAL(rback->error.message, r.error.message);
      BOOST_CHECK_EQUAL(ToJson(*rback).dump(), rj.dump());
    }
  }
  BOOST_CHECK_EQUAL(kinds.size(), 8u);  // the closed set: a new kind gets a case here
}

BOOST_AUTO_TEST_CASE(a_malformed_diagnostic_names_its_field) {
  std::string why;
  BOOST_CHECK(!ge::plugin::DiagnosticFromJson({{"kind", "gossip"}}, &why));
  BOOST_CHECK_MESSAGE(why.find("field 'kind' has an unknown value 'gossip'") != std::string::npos, why);
  BOOST_CHECK(!ge::plugin::DiagnosticFromJson({{"kind", "prototype_replaced"}, {"op_type", 3}}, &why));
  BOOST_CHECK_MESSAGE(why.find("field 'op_type' must be a string") != std::string::npos, why);
  BOOST_CHECK(!ge::plugin::DiagnosticFromJson({{"kind", "split_prototype"}, {"op_type", "X"}}, &why));
  BOOST_CHECK_MESSAGE(why.find("'prototyped_by'") != std::string::npos, why);
  nlohmann::json r = {{"path", "/p.py"}, {"status", "error"}, {"warnings", {"w"}}, {"diagnostics", {{{"kind", 1}}}}};
  BOOST_CHECK(!ge::plugin::FromJson(r, &why));
  BOOST_CHECK_MESSAGE(why.find("diagnostics[0]: diagnostic: field 'kind' must be a string") != std::string::npos, why);
}

BOOST_AUTO_TEST_CASE(a_record_whose_typed_and_text_fields_disagree_is_refused) {
  using namespace ge::plugin;
  std::string why;
  // A kind's text needs its fields: one without is refused, not shown as "op_type ''".
  BOOST_CHECK(!DiagnosticFromJson({{"kind", "prototype_replaced"}}, &why));
  BOOST_CHECK_MESSAGE(why.find("(prototype_replaced): field 'op_type' is missing or empty") != std::string::npos, why);
  BOOST_CHECK(!DiagnosticFromJson({{"kind", "split_prototype"}, {"op_type", "X"}, {"prototyped_by", nlohmann::json::array()}}, &why));
  BOOST_CHECK_MESSAGE(why.find("'prototyped_by' is empty") != std::string::npos, why);
  PluginRecord r = ProblemRecord("acts", "/o/acts.py", PluginStatus::kError, ge::plugin::ErrorKind::kPrototype, "/o/acts.py: not found");
  r.warnings.push_back(ReleaseRules("A", "/o/acts.py", "said"));
  r.error.notes.push_back(SplitPrototype("A", {{"p", "/o/p.py"}}));
  const nlohmann::json good = ToJson(r);
  BOOST_REQUIRE(FromJson(good, &why));
  nlohmann::json bad = good;
  bad.erase("diagnostics");  // the text without the fact (another format, a damaged cache)
  BOOST_CHECK(!FromJson(bad, &why));
  BOOST_CHECK_MESSAGE(why.find("field 'warnings' holds 1 text(s) but 'diagnostics' 0") != std::string::npos, why);
  bad = good;
  bad.erase("error_message");  // "error" holds the notes already: they would be said twice
  BOOST_CHECK(!FromJson(bad, &why));
  BOOST_CHECK_MESSAGE(why.find("'error_notes' without 'error_message'") != std::string::npos, why);
  bad = good;
  bad["error_message"] = "";
  BOOST_CHECK(!FromJson(bad, &why));
  BOOST_CHECK_MESSAGE(why.find("'error_notes' on a record without an error message") != std::string::npos, why);
}

BOOST_AUTO_TEST_CASE(the_resolver_says_which_library_prototype_is_shadowed_afresh) {
  using namespace ge::plugin;
  auto library = [](std::string path, std::vector<std::string> protos) {
    PluginRecord r;
    r.name = path;
    r.path = std::move(path);
    r.status = PluginStatus::kOk;
    r.op_library = true;
    r.prototypes = std::move(protos);
    return r;
  };
  std::vector<PluginRecord> out = Resolve({library("/o/liba.so", {"Scale"}), library("/o/libb.so", {"Scale", "Own"})});
  BOOST_CHECK(out[0].warnings.empty());
  BOOST_REQUIRE_EQUAL(out[1].warnings.size(), 1u);
  BOOST_CHECK(out[1].warnings[0] == LibraryPrototypeShadowed("Scale", "/o/libb.so", "/o/liba.so"));
  // Again (every refresh): said once; once the first library is gone, not at all.
  BOOST_CHECK_EQUAL(Resolve(out)[1].warnings.size(), 1u);
  BOOST_CHECK(Resolve({out[1]})[0].warnings.empty());
}

BOOST_AUTO_TEST_CASE(the_resolver_decides_conflicts_unused_prototypes_and_splits_from_data) {
  using namespace ge::plugin;
  auto python = [](std::string name, std::string path) {
    PluginRecord r;
    r.name = std::move(name);
    r.path = std::move(path);
    r.status = PluginStatus::kOk;
    return r;
  };
  OpRecord gelu;
  gelu.op_type = "Gelu";
  gelu.capabilities = {"eager_execute"};
  PluginRecord lib = python("libcustom.so", "/o/libcustom.so");
  lib.op_library = true;
  lib.ops = {gelu};
  // A Python plugin whose prototype of Gelu a scanner said "replaces" a
  // library's, and whose implementation of Gelu loses to the library's.
  PluginRecord acts = python("acts", "/o/acts.py");
  acts.ops = {gelu};
  acts.warnings.push_back(PrototypeReplaced("Gelu", "acts", "/o/acts.py", "/o/libproto.so"));
  // A prototype-only plugin, and an implementation whose prototype is in it.
  PluginRecord protos = python("protos", "/o/protos.py");
  protos.prototypes = {"Relu"};
  PluginRecord impl = ProblemRecord("impl", "/o/impl.py", PluginStatus::kError, ge::plugin::ErrorKind::kPrototype,
                                    "/o/impl.py: canonical IR not found for schema-bound execute: Relu");
  impl.error.op_type = "Relu";
  // An earlier verdict's note is decided afresh, not kept twice.
  impl.error.notes.push_back(SplitPrototype("Relu", {{"gone", "/o/gone.py"}}));
  std::vector<PluginRecord> out = Resolve({acts, protos, impl, lib});
  BOOST_REQUIRE_EQUAL(out.size(), 4u);
  BOOST_CHECK(out[0].status == PluginStatus::kConflict);
  BOOST_CHECK_EQUAL(out[0].error.op_type, "Gelu");
  BOOST_CHECK_EQUAL(out[0].conflicts_with, "/o/libcustom.so");
  BOOST_CHECK(out[0].error.kind == ErrorKind::kConflict);
  BOOST_CHECK(out[0].error.rule == ConflictRule::kLibraryOverPython);
  BOOST_CHECK_EQUAL(out[0].error.message, ConflictMessage("Gelu", "/o/acts.py", "/o/libcustom.so",
                                                          ConflictRule::kLibraryOverPython));
  BOOST_REQUIRE_EQUAL(out[0].warnings.size(), 1u);
  BOOST_CHECK(out[0].warnings[0].kind == DiagnosticKind::kPrototypeUnused);
  BOOST_CHECK_EQUAL(out[0].warnings[0].library, "/o/libcustom.so");
  BOOST_REQUIRE_EQUAL(out[2].error.notes.size(), 1u);
  BOOST_CHECK(out[2].error.notes[0].prototyped_by == (std::vector<std::pair<std::string, std::string>>{{"protos", "/o/protos.py"}}));
  BOOST_CHECK_EQUAL(out[2].error.message, impl.error.message);
  // Resolved again (the registry does so at every refresh): the same verdicts.
  std::vector<PluginRecord> again = Resolve(out);
  for (std::size_t i = 0; i < out.size(); ++i) BOOST_CHECK_EQUAL(ToJson(again[i]).dump(), ToJson(out[i]).dump());
  // The conflict texts of every rule keep their words.
  BOOST_CHECK_EQUAL(ConflictMessage("A", "/b.py", "/a.py", ConflictRule::kPathOrder),
                    "op_type 'A' from /b.py conflicts with the one from /a.py (first in path order wins)");
  BOOST_CHECK_EQUAL(ConflictMessage("A", "/b.py", "builtin", ConflictRule::kBuiltin),
                    "op_type 'A' from /b.py conflicts with the one from builtin (a built-in op cannot be replaced)");
  BOOST_CHECK_EQUAL(ConflictMessage("A", "/b.so", "/a.so", ConflictRule::kFirstLibrary),
                    "op_type 'A' from /b.so conflicts with the one from /a.so (the first op library in path order wins)");
}

BOOST_AUTO_TEST_CASE(the_resolver_says_what_no_node_can_run) {
  using namespace ge::plugin;
  auto python = [](std::string name, std::string path) {
    PluginRecord r;
    r.name = std::move(name);
    r.path = std::move(path);
    r.status = PluginStatus::kOk;
    return r;
  };
  OpRecord legacy;
  legacy.op_type = "Old";
  legacy.capabilities = {"eager_execute"};
  OpRecord relu;
  relu.op_type = "Relu";
  relu.capabilities = {"eager_execute"};
  // A legacy execute without a prototype, alone.
  PluginRecord old = python("old", "/o/old.py");
  old.unprototyped = {legacy};
  std::vector<Diagnostic> notes = UnservedNotes(Resolve({old}));
  BOOST_REQUIRE_EQUAL(notes.size(), 1u);
  BOOST_CHECK(notes[0] == Unprototyped("Old", "old", "/o/old.py"));
  // With a prototype-only plugin for it: the split, named from the
  // implementation's side, and no second "prototype only" note.
  PluginRecord protos = python("protos", "/o/protos.py");
  protos.prototypes = {"Old", "Lonely"};
  notes = UnservedNotes(Resolve({old, protos}));
  BOOST_REQUIRE_EQUAL(notes.size(), 2u);
  BOOST_CHECK(notes[0] == UnprototypedSplit("Old", "old", "/o/old.py", {{"protos", "/o/protos.py"}}));
  BOOST_CHECK(notes[1] == PrototypeOnly("Lonely", "protos", "/o/protos.py"));
  // A prototype an ok plugin implements, or an op library prototypes (in
  // the records or given apart), is served: no note.
  PluginRecord impl = python("impl", "/o/impl.py");
  impl.ops = {relu};
  protos.prototypes = {"Relu", "Lib", "Given"};
  PluginRecord lib = python("libp.so", "/o/libp.so");
  lib.op_library = true;
  lib.prototypes = {"Lib"};
  BOOST_CHECK(UnservedNotes(Resolve({impl, protos, lib}), {"Given"}).empty());
  // Not when the library failed, nor when the implementing plugin lost a conflict.
  lib.status = PluginStatus::kError;
  notes = UnservedNotes(Resolve({impl, protos, lib}), {"Given"});
  BOOST_REQUIRE_EQUAL(notes.size(), 1u);
  BOOST_CHECK(notes[0] == PrototypeOnly("Lib", "protos", "/o/protos.py"));
  PluginRecord first = python("first", "/o/first.py");
  first.ops = {relu};
  protos.prototypes = {"Relu"};
  std::vector<PluginRecord> resolved = Resolve({first, impl, protos});
  BOOST_CHECK(resolved[1].status == PluginStatus::kConflict);
  BOOST_CHECK(UnservedNotes(resolved).empty());  // Relu is served by "first"
  // A plugin that failed says nothing of its prototypes (its error does).
  protos.status = PluginStatus::kError;
  protos.prototypes = {"Lonely"};
  BOOST_CHECK(UnservedNotes(Resolve({protos})).empty());
}

// A chain a -> b -> c (DT_NEEDED): loading a runs all three's static
// initializers, and each registration is still its own object's, in
// whichever order the three are loaded afterwards.
BOOST_AUTO_TEST_CASE(a_registration_belongs_to_the_library_whose_code_made_it) {
  const std::string dir = GE_TEST_OPLIB_DIR;
  auto names = [](const std::vector<ge::RegisteredPrototype>& v) {
    std::vector<std::string> out;
    for (const auto& p : v) out.push_back(p.op_type);
    return out;
  };
  const ge::plugin::OpLibraryLoad a = ge::plugin::LoadOpLibrary(dir + "/libge_test_chain_a.so");
  BOOST_REQUIRE_MESSAGE(a.error.empty(), a.error);
  BOOST_CHECK(a.registrations.prototypes.empty());
  BOOST_REQUIRE_EQUAL(a.registrations.custom_ops.size(), 1u);
  BOOST_CHECK_EQUAL(a.registrations.custom_ops[0].op_type, "ChainTop");
  // c's prototype waits for c's own load; until then it is a dependency's.
  BOOST_CHECK_EQUAL(ge::plugin::DependencyPrototypeOwner("ChainBase"), dir + "/libge_test_chain_c.so");
  const ge::plugin::OpLibraryLoad c = ge::plugin::LoadOpLibrary(dir + "/libge_test_chain_c.so");
  BOOST_REQUIRE_MESSAGE(c.error.empty(), c.error);
  BOOST_CHECK(names(c.registrations.prototypes) == std::vector<std::string>{"ChainBase"});
  BOOST_CHECK(c.registrations.custom_ops.empty());
  BOOST_CHECK(ge::plugin::DependencyPrototypeOwner("ChainBase").empty());
  const ge::plugin::OpLibraryLoad b = ge::plugin::LoadOpLibrary(dir + "/libge_test_chain_b.so");
  BOOST_CHECK(names(b.registrations.prototypes) == std::vector<std::string>{"ChainTop"});
  // Loaded again: the same, nothing more.
  BOOST_CHECK(ge::plugin::LoadOpLibrary(dir + "/libge_test_chain_a.so").registrations.prototypes.empty());
  BOOST_CHECK(names(ge::plugin::LoadOpLibrary(dir + "/libge_test_chain_b.so").registrations.prototypes) ==
              std::vector<std::string>{"ChainTop"});
}

BOOST_AUTO_TEST_CASE(the_exception_being_handled_is_described_by_type_and_what) {
  BOOST_CHECK(ge::DescribeCurrentException().empty());  // none
  try {
    throw std::out_of_range("index 7");
  } catch (...) {
    BOOST_CHECK_EQUAL(ge::DescribeCurrentException(), "std::out_of_range (what(): index 7)");
  }
  try {
    throw 42;
  } catch (...) {
    BOOST_CHECK_EQUAL(ge::DescribeCurrentException(), "int");
  }
}

BOOST_AUTO_TEST_CASE(a_malformed_record_names_its_field) {
  std::string why;
  BOOST_CHECK(!FromJson({{"path", "/p.py"}, {"status", "ok"}, {"stamp", {{"mtime_ns", "x"}}}}, &why, true));
  BOOST_CHECK_MESSAGE(why.find("stamp: field 'mtime_ns' must be an integer") != std::string::npos, why);
  BOOST_CHECK(!FromJson({{"path", "/p.py"}, {"status", "weird"}}, &why));
  BOOST_CHECK_MESSAGE(why.find("field 'status' has an unknown value 'weird'") != std::string::npos, why);
  BOOST_CHECK(!FromJson({{"path", "/p.py"}, {"status", "ok"}}, &why));
  BOOST_CHECK_MESSAGE(why.find("missing field 'ops'") != std::string::npos, why);
  BOOST_CHECK(!FromJson({{"path", "/p\\q.py"}, {"status", "error"}}, &why));
  BOOST_CHECK_MESSAGE(why.find("not a path spelling") != std::string::npos, why);
  BOOST_CHECK(!FromJson({{"path", "/p.py"}, {"status", "error"}, {"error_line", 0}}, &why));
  BOOST_CHECK_MESSAGE(why.find("error_line") != std::string::npos, why);
}

// The stamps' and the listing index's hash is FNV-1a 64 as specified: the
// published test vectors (draft-eastlake-fnv), so that a stamp written by one
// build is read the same by another.
BOOST_AUTO_TEST_CASE(fnv1a64_matches_the_published_vectors) {
  BOOST_CHECK_EQUAL(ge::Fnv1a64().Hex(), "cbf29ce484222325");
  BOOST_CHECK_EQUAL(ge::Fnv1a64().Add("a").Hex(), "af63dc4c8601ec8c");
  BOOST_CHECK_EQUAL(ge::Fnv1a64().Add("foo").Add("bar").Hex(), "85944171f73967e8");
  const unsigned char zero = 0;
  BOOST_CHECK_EQUAL(ge::Fnv1a64().Add(&zero, 1).Value(), 0xaf63bd4c8601b7dfULL);
}
