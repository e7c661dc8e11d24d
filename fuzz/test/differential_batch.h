// differential_batch.h: the campaign the fuzz tests run to find a planted defect: one batch of
// the differential property, stopping at the first failure, which it writes as a replayable case
// file under the test's temporary directory.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "kvc/fuzz/campaign.h"

namespace kvc::fuzz {

// `corpus_name`: the corpus folder under ::testing::TempDir(), one per test.
inline CampaignConfig one_differential_batch(const std::string& corpus_name) {
  CampaignConfig config;
  config.seconds = 60;
  config.max_runs = 1;
  config.properties = {"differential"};
  config.stop_on_failure = true;
  config.corpus_dir = ::testing::TempDir() + corpus_name;
  return config;
}

}  // namespace kvc::fuzz
