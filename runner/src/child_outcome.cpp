// child_outcome.cpp: see child_outcome.h.
#include "child_outcome.h"

#include "run_options.h"

namespace kvc::runner {
namespace {

// "[301/368]"
std::string position(std::size_t index, std::size_t total) {
  return "[" + std::to_string(index + 1) + "/" + std::to_string(total) + "]";
}

}  // namespace

void mark_ops_called(CheckResult& r) {
  if (r.side != kKernelSide) return;
  if (const std::optional<AbiOp> op = abi_op_from_name(r.op)) {
    r.add_bytes(*op, 0);
  } else if (r.op == kBothOps) {
    r.add_bytes(AbiOp::kKvOnly, 0);
    r.add_bytes(AbiOp::kLegacy, 0);
  }
}

ChildOutcome child_outcome(const SuiteRef& suite, std::size_t first_check, const SuiteJournal& journal,
                           const ProcessEnd& end) {
  ChildOutcome o;
  o.total = journal.checks;
  for (const auto& [index, check] : journal.results) o.checks.push_back(check);
  if (journal.complete) {
    if (!end.exited_zero())
      o.incident = suite.title() + ": the process ran the suite to its end, then ended with " + end.describe();
    return o;
  }

  // The check that ended the process: one it recorded itself, or one it died in.
  std::optional<std::size_t> last;
  std::string why;
  std::string name;
  if (journal.stopped && journal.stopped->check) {
    last = journal.stopped->check;
    why = journal.stopped->why;
    for (const auto& [index, check] : journal.started)
      if (index == *last) name = check.name;
  } else if (const auto running = journal.unfinished()) {
    last = running->first;
    why = end.describe();
    name = running->second.name;
    CheckResult r = running->second;
    mark_ops_called(r);
    // A hung check says so first: its process did not end, the run ended it.
    fail(r, end.kind == ProcessEndKind::kTimedOut ? "HUNG: no result within the check time limit; " + why
                                                  : "the process running this check ended: " + why);
    o.checks.push_back(r);
    o.last_made_here = true;
  }

  if (!last || *last < first_check) {
    // Outside any check: the suite ends early.
    const std::string how = journal.stopped ? journal.stopped->why : end.describe();
    CheckResult r;
    r.side = suite.side;
    r.suite = suite.name;
    r.op = "-";
    r.format = "-";
    r.name = kProcessCheckName;
    std::string not_run;
    if (journal.begun) {
      const std::size_t done = first_check + journal.results.size();
      not_run = std::to_string(journal.checks > done ? journal.checks - done : 0) + " checks not run";
    } else {
      not_run = "it ended before it announced its checks";
    }
    fail(r, "the process running the suite ended outside any check: " + how + "; " + not_run);
    o.checks.push_back(r);
    o.last_made_here = true;
    o.incident = "suite " + suite.title() + " ended early: " + not_run + " (" + how + ")";
    return o;
  }

  const std::string at = suite.title() + ": check " + position(*last, o.total) + " " + name;
  if (*last + 1 < o.total) {
    o.resume_at = *last + 1;
    o.incident = at + " ended its process (" + why + "); the suite went on in a new process from check " +
                 position(*last + 1, o.total);
  } else {
    o.incident = at + ", its last, ended its process (" + why + ")";
  }
  return o;
}

}  // namespace kvc::runner
