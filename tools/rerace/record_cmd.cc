// tools/rerace/record_cmd.cc: `rerace record`, which runs a command under the CUPTI recorder.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "commands.h"
#include "rerace/base/result.h"
#include "rerace/traces/reader.h"

namespace rerace::tools {

namespace {

// What the child exits with when the command cannot be run, as a shell does.
constexpr int kExitCannotRun = 127;

struct RecordArgs {
  std::string probe;
  std::string output = "rerace.rrt";
  std::string library;
  std::vector<std::string> command;
};

std::string DefaultLibrary() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (const char* rel : {"../lib/librerace_cupti.so", "../lib/rerace/librerace_cupti.so"}) {
    const auto p = (exe.parent_path() / rel).lexically_normal();
    if (std::filesystem::exists(p)) return p.string();
  }
  return "";
}

int RunRecord(const RecordArgs& a) {
  if (a.command.empty())
    return ReportError({"record: no command given: rerace record [-o FILE] -- COMMAND ARGS...", kExitUsage});
  const std::string lib = a.library.empty() ? DefaultLibrary() : a.library;
  if (lib.empty() || !std::filesystem::exists(lib))
    return ReportError({fmt::format("record: the CUPTI injection library was not found{}{}: build "
                                    "with CUDA (make build CUDA=ON) or pass --library",
                                    lib.empty() ? "" : " at ", lib),
                        kExitNoInput});
  for (const char* var : {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"}) {
    const char* cur = std::getenv(var);
    if (cur && *cur && std::string(cur) != lib)
      return ReportError({fmt::format("record: {} is already set to {} (another tool's injection); "
                                      "unset it to record with rerace",
                                      var, cur),
                          kExitUsage});
  }
  if (!a.probe.empty()) {
    // The Triton probe: a path entry whose sitecustomize imports it at start-up.
    // Installed: <prefix>/share/rerace/python; in a build tree: the source's recorder/python.
    std::string dir = std::string(RERACE_PROBE_DIR);
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      const auto installed = (exe.parent_path() / "../share/rerace/python").lexically_normal();
      if (std::filesystem::exists(installed / "rerace_probe")) dir = installed.string();
    }
    const std::string boot = dir + "/rerace_probe/boot";
    if (!std::filesystem::exists(boot + "/sitecustomize.py"))
      return ReportError({fmt::format("record: the Triton probe is not at {}", boot), kExitNoInput});
    const char* old = std::getenv("PYTHONPATH");
    const std::string path = boot + ":" + dir + (old && *old ? std::string(":") + old : "");
    setenv("PYTHONPATH", path.c_str(), 1);
    // Field writes too, so that --recorded can place every write of the shared fields.
    setenv("RERACE_PROBE_FIELDS", "1", 0);
  }
  const std::string out = std::filesystem::absolute(a.output).string();
  setenv("CUDA_INJECTION64_PATH", lib.c_str(), 1);
  setenv("NVTX_INJECTION64_PATH", lib.c_str(), 1);
  setenv("RERACE_TRACE", out.c_str(), 1);
  // Files older than this run are an earlier run's (a rank file left in the same folder).
  const auto started = std::filesystem::file_time_type::clock::now() - std::chrono::seconds(1);
  // A pipe closed by a successful exec: a byte on it says the command never started, which is
  // the whole error (no "created no CUDA context" after it).
  int exec_failed[2];
  if (pipe2(exec_failed, O_CLOEXEC) != 0)
    return ReportError({fmt::format("record: pipe: {}", std::strerror(errno)), kExitInternal});
  const pid_t child = fork();
  if (child < 0) return ReportError({fmt::format("record: fork failed: {}", std::strerror(errno)), kExitInternal});
  if (child == 0) {
    close(exec_failed[0]);
    std::vector<char*> argv;
    for (const auto& s : a.command) argv.push_back(const_cast<char*>(s.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "rerace: error: record: cannot run %s: %s\n", argv[0], std::strerror(errno));
    const char byte = 1;
    (void)!write(exec_failed[1], &byte, 1);
    _exit(kExitCannotRun);
  }
  close(exec_failed[1]);
  char byte = 0;
  ssize_t got;
  while ((got = read(exec_failed[0], &byte, 1)) < 0 && errno == EINTR) {
  }
  close(exec_failed[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (got == 1) return kExitCannotRun;  // said by the child, in one line
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // The recorder names each process's file by rank and pid: list what this run wrote.
  const auto dir = std::filesystem::path(out).parent_path();
  const std::string stem = std::filesystem::path(out).stem().string();
  // Run per rank (torchrun starting `rerace record` once per process): this rank's files only,
  // not another rank's that may still be being written. Run around a launcher: every rank's.
  const char* own_rank = std::getenv("RANK");
  if (own_rank == nullptr || *own_rank == 0) own_rank = std::getenv("LOCAL_RANK");
  const std::string rank_tag =
      own_rank != nullptr && *own_rank != 0 ? fmt::format(".rank{}.", own_rank) : ".rank";
  size_t written = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.empty() ? "." : dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(stem + ".", 0) != 0 || entry.path().extension() != ".rrt") continue;
    if (name.find(fmt::format("pid{}.", child)) == std::string::npos &&
        name.find(rank_tag) == std::string::npos)
      continue;
    std::error_code ec;
    if (std::filesystem::last_write_time(entry.path(), ec) < started || ec) continue;
    ++written;
    auto t = traces::ReadTrace(entry.path().string());
    if (!t) {
      std::fprintf(stderr, "rerace: %s\n", t.error().message.c_str());
      continue;
    }
    uint64_t launches = 0, tuner = 0;
    for (const auto& e : t->events) {
      launches += e.kind == traces::EventKind::kLaunch;
      tuner += e.kind == traces::EventKind::kTuner;
    }
    std::fprintf(stderr,
                 "rerace: trace %s: %zu events, %zu threads, %llu launches, %llu tuner transitions, "
                 "%llu CUPTI records dropped, %s\n",
                 entry.path().c_str(), t->events.size(), t->threads.size(),
                 static_cast<unsigned long long>(launches), static_cast<unsigned long long>(tuner),
                 static_cast<unsigned long long>(t->footer.cupti_dropped),
                 t->truncated ? t->truncation.c_str() : "complete");
  }
  // The recorder starts with the first CUDA context: a command that never made one (no GPU, or
  // no CUDA at all) leaves no trace. Say so rather than exit 0 with nothing written.
  if (written == 0) {
    std::fprintf(stderr,
                 "rerace: error: record: %s created no CUDA context, so no trace was written (%s.*.rrt): "
                 "is there a GPU, and does the command use it through CUDA?\n",
                 a.command.front().c_str(), (dir / stem).c_str());
    return code != 0 ? code : kExitNoInput;
  }
  return code;
}

}  // namespace

void RegisterRecord(CLI::App& app, CommandTable& table) {
  auto a = std::make_shared<RecordArgs>();
  CLI::App* r = app.add_subcommand(
      "record",
      "Run a command under the CUPTI recorder (GPU machines): every launch, its GPU timing, the "
      "synchronizations and the NVTX tuner marks go to a trace per process, named "
      "FILE-stem.[rankR.]pidP.rrt. The command's exit status is passed through; a command that "
      "created no CUDA context writes no trace, which is an error (exit 66 when the command "
      "itself succeeded)");
  r->add_option("-o,--output", a->output, "Trace file name (stem)")->default_val("rerace.rrt");
  r->add_option("--probe", a->probe,
                "Load a probe into the program: 'triton' instruments Triton's Autotuner (and "
                "FLA's CachedAutotuner) without changing the program")
      ->check(CLI::IsMember({"triton"}));
  r->add_option("--library", a->library, "The injection library (default: next to this binary)");
  r->add_option("command", a->command, "The command and its arguments, after --")->required();
  table.Add(r, [a] { return RunRecord(*a); });
}

}  // namespace rerace::tools
