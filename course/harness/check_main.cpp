// The main of every check program: Catch2, with the `attn-grade` reporter, which writes one JSON
// document for attn grade: per test case its name, tags, whether it passed, and each failed
// assertion with the expression, what it expanded to and the messages in scope (the
// expected-versus-got evidence), and the test's notes (its WARN messages).
#define CATCH_CONFIG_MAIN
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <string>

namespace {

std::string result_kind(Catch::ResultWas::OfType type) {
  switch (type) {
    case Catch::ResultWas::ExpressionFailed:
      return "check failed";
    case Catch::ResultWas::ExplicitFailure:
      return "failed";
    case Catch::ResultWas::ThrewException:
      return "threw an exception";
    case Catch::ResultWas::FatalErrorCondition:
      return "crashed";
    case Catch::ResultWas::DidntThrowException:
      return "did not throw";
    default:
      return "failed";
  }
}

class GradeReporter : public Catch::StreamingReporterBase<GradeReporter> {
 public:
  using StreamingReporterBase::StreamingReporterBase;

  static std::string getDescription() { return "one JSON document for attn grade"; }

  void assertionStarting(const Catch::AssertionInfo&) override {}

  bool assertionEnded(const Catch::AssertionStats& stats) override {
    const Catch::AssertionResult& result = stats.assertionResult;
    // A WARN of a test is a note for the student (a prediction's comparison): printed, never a
    // failure.
    if (result.getResultType() == Catch::ResultWas::Warning && result.hasMessage()) {
      current_["notes"].push_back(result.getMessage());
      return true;
    }
    if (result.isOk()) return true;
    nlohmann::json failure;
    failure["kind"] = result_kind(result.getResultType());
    failure["file"] = result.getSourceInfo().file;
    failure["line"] = result.getSourceInfo().line;
    if (result.hasExpression()) {
      failure["expression"] = result.getExpressionInMacro();
      failure["expanded"] = result.getExpandedExpression();
    }
    if (result.hasMessage()) failure["message"] = result.getMessage();
    nlohmann::json messages = nlohmann::json::array();
    for (const Catch::MessageInfo& info : stats.infoMessages) {
      if (info.type == Catch::ResultWas::Info || info.type == Catch::ResultWas::Warning) {
        messages.push_back(info.message);
      }
    }
    failure["info"] = messages;
    current_["failures"].push_back(failure);
    return true;
  }

  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    StreamingReporterBase::testCaseStarting(info);
    current_ = {{"name", info.name},
                {"tags", info.tags},
                {"failures", nlohmann::json::array()},
                {"notes", nlohmann::json::array()}};
  }

  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    current_["passed"] = stats.totals.assertions.allOk() && stats.totals.testCases.failed == 0;
    current_["assertions"] = stats.totals.assertions.total();
    tests_.push_back(current_);
    StreamingReporterBase::testCaseEnded(stats);
  }

  void testRunEnded(const Catch::TestRunStats& stats) override {
    stream << nlohmann::json{{"tests", tests_}}.dump(-1, ' ', false,
                                                     nlohmann::json::error_handler_t::replace)
           << '\n';
    stream.flush();
    StreamingReporterBase::testRunEnded(stats);
  }

  // A signal (segfault, abort) ends the process after this: write what is known so far.
  void fatalErrorEncountered(Catch::StringRef error) override {
    current_["passed"] = false;
    current_["fatal"] = std::string(error);
    tests_.push_back(current_);
    stream << nlohmann::json{{"tests", tests_}}.dump(-1, ' ', false,
                                                     nlohmann::json::error_handler_t::replace)
           << '\n';
    stream.flush();
  }

 private:
  nlohmann::json current_;
  nlohmann::json tests_ = nlohmann::json::array();
};

}  // namespace

CATCH_REGISTER_REPORTER("attn-grade", GradeReporter)
