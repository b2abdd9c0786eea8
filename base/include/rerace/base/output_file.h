// rerace/base/output_file.h: writing to the path the user named, never replacing it.
//
// Every file rerace writes (`export -o`, `synth -o`, `--save-schedule`, `--perfetto`,
// `--junit`) goes through an `OutputPlace`:
//
// - a regular file, or a path that does not exist yet: written under a temporary name in the
//   same directory and renamed over the path once complete (a failed write leaves the old file,
//   or nothing, behind; the old file's permission bits are kept);
// - anything else (a device such as /dev/full, a FIFO, a symlink, whose target is written and
//   the link kept, /dev/stdout): written in place, so that its errors (ENOSPC from /dev/full)
//   are the command's, exit 74. NB: a failed in-place write may leave part of the output.
//
//   auto place = OutputPlace::Open(path);          // or WriteOutput(path, text)
//   if (!place) return place.error();
//   ... write place->write_path() (fopen "wb") ...
//   if (auto c = place->Commit(); !c) return c.error();
//
// `RefuseOutputIsInput` refuses an output that is one of the command's inputs (`export t.rrt
// -o t.rrt` would otherwise destroy the trace it reads).
//
// Header only (base has no sources); POSIX. Safe to use from any thread, one object per thread.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "rerace/base/result.h"

namespace rerace {

class OutputPlace {
 public:
  // Decides how `path` is written; for a regular file, reserves the temporary (O_EXCL).
  [[nodiscard]] static Result<OutputPlace> Open(const std::string& path) {
    OutputPlace p;
    p.path_ = path;
    if (path.empty()) return Error{"an output path is empty", kExitUsage};
    struct stat link {};
    if (::lstat(path.c_str(), &link) == 0) {
      if (!S_ISREG(link.st_mode)) {  // a device, a FIFO, a symlink (its target), a directory
        struct stat target {};
        if (::stat(path.c_str(), &target) == 0 && S_ISDIR(target.st_mode))
          return Error{path + ": cannot write: it is a directory", kExitIoError};
        p.in_place_ = true;
        return p;
      }
      p.mode_ = link.st_mode & 07777;
    } else if (errno != ENOENT) {
      return Error{path + ": cannot write: " + std::strerror(errno), kExitIoError};
    }
    static std::atomic<unsigned> serial{0};
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::string tmp = path + ".tmp-" + std::to_string(static_cast<long>(::getpid())) + "-" +
                        std::to_string(serial.fetch_add(1));
      const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd >= 0) {
        if (p.mode_ != 0) (void)::fchmod(fd, p.mode_);
        ::close(fd);
        p.tmp_ = std::move(tmp);
        return p;
      }
      if (errno != EEXIST) return Error{path + ": cannot write: " + std::strerror(errno), kExitIoError};
    }
    return Error{path + ": cannot write: no free temporary name beside it", kExitIoError};
  }

  OutputPlace(OutputPlace&& o) noexcept
      : path_(std::move(o.path_)), tmp_(std::exchange(o.tmp_, {})), in_place_(o.in_place_), mode_(o.mode_) {}
  OutputPlace& operator=(OutputPlace&&) = delete;
  OutputPlace(const OutputPlace&) = delete;
  ~OutputPlace() {
    if (!tmp_.empty()) std::remove(tmp_.c_str());
  }

  // Where to write: the temporary, or the path itself when written in place.
  const std::string& write_path() const { return in_place_ ? path_ : tmp_; }
  const std::string& path() const { return path_; }
  bool in_place() const { return in_place_; }

  // After write_path() was written and closed without error: renames the temporary over the
  // path (nothing to do in place).
  [[nodiscard]] Result<void> Commit() {
    if (in_place_) return {};
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
      return Error{path_ + ": cannot write (rename from " + tmp_ + "): " + std::strerror(errno),
                   kExitIoError};
    tmp_.clear();
    return {};
  }

 private:
  OutputPlace() = default;
  std::string path_;
  std::string tmp_;
  bool in_place_ = false;
  mode_t mode_ = 0;
};

// `text` written to `path` as OutputPlace says; every write error is exit 74.
[[nodiscard]] inline Result<void> WriteOutput(const std::string& path, const std::string& text) {
  auto place = OutputPlace::Open(path);
  if (!place) return place.error();
  std::FILE* f = std::fopen(place->write_path().c_str(), "wb");
  if (f == nullptr) return Error{path + ": cannot write: " + std::strerror(errno), kExitIoError};
  errno = 0;
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool flushed = std::fflush(f) == 0;
  const int err = errno;
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !flushed || !closed)
    return Error{path + ": cannot write: " + std::strerror(err != 0 ? err : errno != 0 ? errno : EIO),
                 kExitIoError};
  return place->Commit();
}

// Exit 64 when `out` names the same file as one of `inputs` (same device and inode; a path
// that does not exist yet is no input). `flag` names the output in the message.
[[nodiscard]] inline Result<void> RefuseOutputIsInput(const std::string& flag, const std::string& out,
                                                      const std::vector<std::string>& inputs) {
  struct stat o {};
  if (out.empty() || ::stat(out.c_str(), &o) != 0) return {};
  if (!S_ISREG(o.st_mode)) return {};  // /dev/stdout, a FIFO: written in place, never read back
  for (const std::string& in : inputs) {
    struct stat i {};
    if (!in.empty() && ::stat(in.c_str(), &i) == 0 && i.st_dev == o.st_dev && i.st_ino == o.st_ino)
      return Error{flag + " " + out + ": that is the input " + in +
                       " (writing it would destroy what is read); name another file",
                   kExitUsage};
  }
  return {};
}

}  // namespace rerace
