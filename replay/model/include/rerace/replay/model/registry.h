// replay/model/include/rerace/replay/model/registry.h: which tuner model replays a recording (private to replay).
//
// One table (registry.cc) names every model, the recorded tuner classes it stands for and the
// recorded Triton versions it is chosen for. `--model NAME` picks a model by name; `--model
// auto` (the default) picks by the recording: the first tuner class a model claims (FLA's
// CachedAutotuner, rerace's native tuner), else Triton's Autotuner of the recorded Triton
// version (the probe's metadata, Program::tuner_meta; recordings without it are 3.6).
// Adding a model: its file under models/ defines `const TunerModel& Name()`, and one row here.
#pragma once

#include <string>

#include "rerace/replay/model/tuner_world.h"

namespace rerace::replay::detail {

// The model named `name` (a ModelNames() entry), or null.
const TunerModel* FindModel(const std::string& name);
// The model `--model auto` chooses for `p`.
std::string AutoModel(const Program& p);
// The Triton version the recording names ("" when none does).
std::string RecordedTriton(const Program& p);

}  // namespace rerace::replay::detail
