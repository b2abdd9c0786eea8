// Corrupt and hostile trace fixtures: how each is made. tests/data/ holds the files; the
// fixture test regenerates them and checks they have not drifted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rerace::traces::testing {

struct Fixture {
  std::string name;                // file name under tests/data/
  std::vector<uint8_t> bytes;
  std::string expected;            // a fragment of the reader's one-line error
};

std::vector<Fixture> MakeFixtures();
// A small valid trace with one event of every kind (also the truncation test's subject).
std::vector<uint8_t> SmallTrace();

}  // namespace rerace::traces::testing
