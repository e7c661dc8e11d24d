// probe_library.cpp: the probe's kernel library through the device backend (see probe_library.h).
#include "probe_library.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "kvc/abi/dl_dtype.h"
#include "kvc/kernel_abi.h"
#include "testkit/device/device_backend.h"
#include "testkit/device/device_buffers.h"
#include "testkit/device/kernel_library.h"
#include "testkit/device/stacked_ctx_kv_device.h"
#include "testkit/probe/probe_writes.h"

namespace kvc::runner {
namespace {

// The first ABI version whose kvc_op_support carries the fused kv_norm query and the validation scope.
constexpr std::int32_t kAbiVersion12 = 1002;
// A declared list longer than this is a library bug; the probe reads no further.
constexpr std::int32_t kMaxEnforcedCodes = 1000;

// The (op, format, kv dtype) a call asks the library about.
struct SupportQuery {
  std::int32_t op = KVC_OP_KV_ONLY_INSERT;
  std::optional<std::int32_t> format;  // none: the call names no format the ABI has
  std::optional<DType> kv_dtype;       // none: absent, or a dtype DLPack cannot name
};

std::optional<DType> dl_nameable(const HostTensor& t) {
  if (!t.present || dtype_size(t.meta.dtype) == 0) return std::nullopt;
  return t.meta.dtype;
}

SupportQuery query_of(const ProbeCell& cell, std::int32_t abi_version) {
  SupportQuery q;
  if (const auto* insert = std::get_if<InsertCall>(&cell.call)) {
    const InsertCase& c = insert->c;
    q.op = cell.op == AbiOp::kLegacy                                         ? KVC_OP_LEGACY_INSERT
           : cell.op == AbiOp::kKvOnlyKvNorm && abi_version >= kAbiVersion12 ? KVC_OP_KV_ONLY_INSERT_KV_NORM
                                                                             : KVC_OP_KV_ONLY_INSERT;
    if (const auto f = format_of(c)) q.format = static_cast<std::int32_t>(*f);
    q.kv_dtype = dl_nameable(c.kv);
  } else if (const auto* store = std::get_if<StoreCall>(&cell.call)) {
    q.op = KVC_OP_STORE_ROTATED;
    q.format = static_cast<std::int32_t>(store_format(store->c));
    q.kv_dtype = dl_nameable(store->c.rows);
  } else {
    q.op = KVC_OP_STACKED_CTX_KV;
    q.format = KVC_FORMAT_NONE;
    q.kv_dtype = dl_nameable(std::get<StackedCall>(cell.call).c.x);
  }
  return q;
}

kvc_op_support support_of(const testkit::KernelLibrary& library, std::int32_t op, std::int32_t format, DType dtype) {
  kvc_op_support s{};
  s.struct_size = sizeof s;
  if (library.abi().kvc_op_support_get(op, format, abi::dl_dtype(dtype), &s) != KVC_STATUS_OK) {
    s = kvc_op_support{};
    s.supported = 0;
  }
  return s;
}

bool lists(const kvc_op_support& s, int code) {
  if (s.enforced_codes == nullptr || s.enforced_code_count <= 0) return false;
  const std::int32_t n = std::min(s.enforced_code_count, kMaxEnforcedCodes);
  return std::find(s.enforced_codes, s.enforced_codes + n, code) != s.enforced_codes + n;
}

}  // namespace

struct ProbeLibrary::Impl {
  testkit::KernelLibrary library;
};

ProbeLibrary::ProbeLibrary(const std::string& path) {
  try {
    impl_ = std::make_unique<Impl>(
        Impl{path.empty() ? testkit::KernelLibrary::from_environment() : testkit::KernelLibrary::open(path)});
  } catch (const testkit::KernelLibraryError& e) {
    throw std::runtime_error(e.what());
  }
}

ProbeLibrary::~ProbeLibrary() = default;

std::string ProbeLibrary::describe() const { return impl_->library.describe(); }

bool ProbeLibrary::exports(ProbeFamily family) const {
  switch (family) {
    case ProbeFamily::kInsert: return true;
    case ProbeFamily::kStore: return impl_->library.abi().kvc_store_rotated != nullptr;
    case ProbeFamily::kStacked: return impl_->library.abi().kvc_stacked_ctx_kv != nullptr;
  }
  return false;
}

CellDeclaration ProbeLibrary::declaration(const ProbeCell& cell) const {
  const testkit::KernelLibrary& library = impl_->library;
  const SupportQuery q = query_of(cell, library.abi_version());
  CellDeclaration d;
  if (q.format && q.kv_dtype) d.outside_support = !support_of(library, q.op, *q.format, *q.kv_dtype).supported;
  // The validation scope of the op and format the cell starts from, with its bf16 rows (what the
  // small cases are): a broken call's own dtype may be one the library declares nothing for.
  const std::int32_t base_format = cell.base_format ? static_cast<std::int32_t>(*cell.base_format) : KVC_FORMAT_NONE;
  const kvc_op_support base = support_of(library, q.op, base_format, DType::kBF16);
  const int code = static_cast<int>(cell.code);
  d.declared_enforced =
      base.validation == KVC_VALIDATION_ALL || (base.validation == KVC_VALIDATION_LISTED && lists(base, code));
  return d;
}

testkit::ProbeObservation ProbeLibrary::send(const ProbeCell& cell) {
  if (!cell.not_sent.empty()) throw std::logic_error("cell " + cell.name + " is not sent: " + cell.not_sent);
  testkit::ProbeObservation o;
  testkit::DeviceBackendOptions direct;
  direct.host_validation = false;
  direct.throw_on_damage = false;
  // Runs the call; true when its outputs were downloaded (an accepted call without a fault). A
  // sticky CUDA error is the library's once it was called, the harness's before.
  const auto attempt = [&o](const auto& call, const auto& called) {
    try {
      return call();
    } catch (const testkit::KernelCallError&) {    // 401, 402, 403: the status is in the checks
    } catch (const testkit::BufferDamageError&) {  // the stacked runner throws damage: it is in the checks
    } catch (const testkit::DeviceError& e) {
      if (!called())
        throw std::runtime_error(std::string("the harness failed before calling the library: ") + e.what());
      o.cuda_fault = e.what();
    }
    return false;
  };

  if (const auto* insert = std::get_if<InsertCall>(&cell.call)) {
    testkit::DeviceBackend device(impl_->library, direct);
    InsertOutputs out = insert->out;
    const bool downloaded =
        attempt([&] { return device.run(insert->c, out).ok(); }, [&] { return device.last_checks().abi_called; });
    const testkit::DeviceRunChecks& checks = device.last_checks();
    o.status = checks.abi_status;
    o.message = checks.abi_message;
    testkit::observe_insert_call(insert->c, checks.damage, insert->out.cache, downloaded ? &out.cache : nullptr, &o);
  } else if (const auto* store = std::get_if<StoreCall>(&cell.call)) {
    testkit::DeviceBackend device(impl_->library, direct);
    std::vector<std::uint8_t> backing = store->backing;
    const bool downloaded = attempt([&] { return device.run_store(store->c, backing).ok(); },
                                    [&] { return device.last_checks().abi_called; });
    const testkit::DeviceRunChecks& checks = device.last_checks();
    o.status = checks.abi_status;
    o.message = checks.abi_message;
    testkit::observe_store_call(store->c, checks.damage, store->backing, downloaded ? &backing : nullptr, &o);
  } else {
    const StackedCall& stacked = std::get<StackedCall>(cell.call);
    testkit::StackedCtxKvDevice device(impl_->library);
    testkit::StackedDeviceOptions options;
    options.host_validation = false;
    options.path = stacked.path;
    testkit::StackedDeviceRun run;
    StackedCtxKvOutputs out = stacked.out;
    const bool downloaded =
        attempt([&] { return device.run(stacked.c, out, options, &run).ok(); }, [&] { return run.abi_called; });
    if (!run.abi_called) throw std::runtime_error("the harness answered the stacked call before the library");
    o.status = run.checks.abi_status;
    o.message = run.checks.abi_message;
    testkit::observe_stacked_call(stacked.c, run.checks.damage, stacked.out, downloaded ? &out : nullptr, &o);
  }
  return o;
}

}  // namespace kvc::runner
