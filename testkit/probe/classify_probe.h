// classify_probe.h: one rule-breaking call's class and "where", from what the probe saw.
//
// Inputs: how the child process that made the call ended (exit, signal, time limit) and, when it
// reported, its observation (probe_observation.h: status, sticky CUDA error, located writes, bad
// rows); the codes the rule calls for. Output: one ProbeClass, the worst that applies in the
// order of probe_class.h, and a one-line "where" (buffer, offset, row and slot when known, or the
// status). A pure function, so that every class is tested on the CPU.
#pragma once

#include <string>
#include <vector>

#include "testkit/probe/probe_class.h"
#include "testkit/probe/probe_observation.h"

namespace kvc::testkit {

enum class ChildEnd : std::uint8_t {
  kExited = 0,    // exit(exit_code)
  kSignaled = 1,  // killed by `signal`
  kTimedOut = 2,  // still running at the time limit, then killed
};

struct ChildOutcome {
  ChildEnd end = ChildEnd::kExited;
  int exit_code = 0;
  int signal = 0;
  double limit_seconds = 0;  // kTimedOut
  bool reported = false;     // printed its result line
  std::string last_line;     // the last line it printed (an abort or a driver message), for the where
};

struct ProbeExpectation {
  // The statuses that count as the right rejection: the rule's code (KVC_STATUS_BAD_ARGUMENT when
  // the breaker leaves out a required tensor, which reaches the ABI as NULL), and
  // KVC_STATUS_UNSUPPORTED when the call lies outside the support the library declares.
  std::vector<int> right_codes;
};

struct ProbeInput {
  std::string not_sent;  // non-empty: why the call never reached the library (nothing else is read)
  ChildOutcome child;
  ProbeObservation observed;  // meaningful when child.reported
  ProbeExpectation expected;
};

struct ProbeVerdict {
  ProbeClass cls = ProbeClass::kNotSent;
  std::string where;
};

ProbeVerdict classify_probe(const ProbeInput& in);

// "101 kKvDtype", "402 unsupported", "0 ok", "999 (not a kvconform status)".
std::string probe_status_text(int status);

}  // namespace kvc::testkit
