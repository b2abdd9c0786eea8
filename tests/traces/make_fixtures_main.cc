// Writes the corrupt-trace fixtures into a folder (tests/data in the source tree).
#include <cstdio>
#include <fstream>

#include "fixtures.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_trace_fixtures DIR\n");
    return 64;
  }
  for (const auto& f : rerace::traces::testing::MakeFixtures()) {
    const std::string path = std::string(argv[1]) + "/" + f.name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(f.bytes.data()), static_cast<std::streamsize>(f.bytes.size()));
    if (!out) {
      std::fprintf(stderr, "make_trace_fixtures: cannot write %s\n", path.c_str());
      return 74;
    }
    std::printf("%s (%zu bytes)\n", path.c_str(), f.bytes.size());
  }
  return 0;
}
