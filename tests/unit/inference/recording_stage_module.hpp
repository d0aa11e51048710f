#pragma once
// What the recording stage module saw, and how it is told to behave; the test reaches it through the
// module's cnet_recording_state().
#include <cstddef>

struct RecordingModuleState {
  static constexpr std::size_t kMaxStarts = 64;
  struct Start {
    std::size_t rows = 0, next_rows = 0;
  };
  // seen
  Start started[kMaxStarts];
  std::size_t starts = 0, flushes = 0, stages_created = 0;
  bool linked_from_prev = false, linked_to_next = false;
  // behaviour
  std::size_t free_bytes = std::size_t{1} << 30;
  int polls_per_micro_batch = 2, polls_left = 0;
  bool stall = false, flush_stalls = false;
  char start_error[128] = "", poll_error[128] = "", flush_error[128] = "";
};
