// decode_command.h: `kvconform decode`, a cache page as a table of decoded records.
//
//   kvconform decode [FILE] [--op kv_only|legacy] [--format packed584] [--tokens 17]
//                    [--block-size 16] [--seed 42] [--dense] [--page 0] [--slot S]
//                    [--dims 0,1,447,448,511] [--all-dims]
//
// FILE is a case file (a fuzz corpus file, or a bare case as case_to_json writes it), whose case
// the oracle runs under the profile the file records, or a golden fixture manifest, whose frozen
// expected bytes are shown. Without FILE the case is generated from a registry spec (format,
// tokens, block size, seed; padded pages unless --dense). One line per token of the page: slot,
// the row that wrote it, the scale bytes with their exponents, the pad byte, and the chosen dims
// as raw bits = decoded value (fp8 codes times their block scale or the per-tensor scale);
// --all-dims adds every dim of each written record. Records are decoded by the oracle's codec
// (record_codec.h), which never fails on odd bytes.
#pragma once

#include <memory>

#include <CLI/CLI.hpp>

namespace kvc::runner {

class DecodeCommand {
 public:
  explicit DecodeCommand(CLI::App& parent);
  ~DecodeCommand();
  DecodeCommand(const DecodeCommand&) = delete;
  DecodeCommand& operator=(const DecodeCommand&) = delete;

  bool selected() const;
  int execute();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kvc::runner
