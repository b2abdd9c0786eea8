// replay/report/include/rerace/replay/report/checked.h: what a command checked, named the same way in every line a user reads
// (issue 28): the fix, and the patch files by name and content hash, so that two patches (or
// two versions of one) are never reported, listed or saved under one name.
//
// A patch is named "my_lock.py (sha256 1a2b3c4d)": the file's base name and the first 8 hex
// digits of the SHA-256 of its bytes, read when the label is made.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rerace::replay {

// The SHA-256 of `data`, as 64 lower-case hex digits (FIPS 180-4).
std::string Sha256Hex(std::string_view data);

struct PatchId {
  std::string path;    // as given to --patch
  std::string name;    // its base name, "my_lock.py"
  std::string sha256;  // 64 hex digits of its content; "" when it cannot be read
  std::string Short() const { return sha256.empty() ? "unreadable" : sha256.substr(0, 8); }
  // "my_lock.py (sha256 1a2b3c4d)"
  std::string Words() const;
  // "my_lock-1a2b3c4d": for file names (letters, digits, '.', '_', '-' only).
  std::string FileTag() const;
};

PatchId IdentifyPatch(const std::string& path);
std::vector<PatchId> IdentifyPatches(const std::vector<std::string>& paths);

// "fix 'lock-run'", "patch my_lock.py (sha256 1a2b3c4d)", "fix 'lock-run' + patch ...", or
// "fix 'none'" when neither was given; without `quote`, "fix lock-run" (fuzz's listing).
std::string CheckedWords(const std::string& fix, const std::vector<PatchId>& patches,
                         bool quote = true);

// The same without the content hashes: "patch my_lock.py", "fix 'lock-run' + patch
// my_lock.py". For a name that must stay the same when a patch file is edited (a JUnit test
// case, whose history a CI page keeps by name); whatever carries it must give the hashes
// beside it (the case's properties), since this name alone does not tell two versions apart.
std::string CheckedNames(const std::string& fix, const std::vector<PatchId>& patches,
                         bool quote = true);

// A file-name part for the same: "lock-run", "my_lock-1a2b3c4d", "lock-run_my_lock-1a2b3c4d",
// "none". A fix description that had to be changed to fit a file name
// ("lock=hooks" -> "lock_hooks") gains the short hash of the description, so that two
// descriptions never share a name.
std::string CheckedFileTag(const std::string& fix, const std::vector<PatchId>& patches);

}  // namespace rerace::replay
