#include "rows_from_ranks.hpp"

#include "job.hpp"

namespace cnet::inference {

void RowsFromRanks::expect(std::uint32_t rank, const MicroBatch& mb) {
  Incoming& in = incoming_.emplace_back(Incoming{mb, std::vector<float>(mb.rows * width_), nullptr});
  in.request = ch_.recv(rank, output_tag(mb.index), bytes(in.rows));
}

void RowsFromRanks::take_arrived() {
  for (auto it = incoming_.begin(); it != incoming_.end();) {
    if (!ch_.test(*it->request)) {
      ++it;
      continue;
    }
    sink_.put(it->mb, it->rows);
    it = incoming_.erase(it);
  }
}

void RowsFromRanks::take_all() {
  while (!incoming_.empty()) {
    ch_.wait(*incoming_.front().request);
    take_arrived();
  }
}

}  // namespace cnet::inference
