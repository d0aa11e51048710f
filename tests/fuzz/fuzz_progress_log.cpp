// OUTPUT.progress as a crash (or a hostile user) may leave it: resumed, or refused with the reason.
#include "cnet/inference/progress_log.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string path = cnet::fuzz::as_file(data, size, "out.progress");
  try {
    auto log = cnet::inference::ProgressLog::resume(path, "job", 64);
    for (auto mb : log.done())
      if (mb >= 64) __builtin_trap();  // a record outside the job got through
  } catch (const std::runtime_error&) {
  }
  return 0;
}
