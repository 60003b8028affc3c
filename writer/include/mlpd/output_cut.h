// A kill by TERM, INT or HUP at any moment must leave a file that reads to its last whole round
// (docs/production.md). A fatal signal stops the helper's write(2) of a round anywhere (the kernel
// checks for a fatal signal at every page it copies), so the file the process is writing could end
// inside a buffer. This keeps what the signal handler (agent/src/exit_signals.cpp) needs to cut it back
// to the last whole round: the descriptor of the one output file written now, the offset where its
// last complete round ended, and whether a write is under way.
//
// Protocol (Dekker, sequentially consistent): the writer sets `busy`, then looks at `frozen`; the
// handler sets `frozen`, then waits for `busy` to clear. Either the writer sees `frozen` and does not
// touch the file, or the handler sees `busy` and waits for the write to end. Only lock-free atomics,
// nanosleep and ftruncate: async-signal-safe.
#pragma once

#include <cstdint>

namespace mlpd::output_cut {

// The writer's side (the agent's helper thread; sink.cpp for the agent's own output file).
// The file now written; nothing to cut to until mark_whole(). Ignored once frozen (the file attached
// before stays the one to cut).
void attach(int fd) noexcept;
// Around every write or close of the attached descriptor: enter() false means the output was cut
// (the process is ending): do not touch the descriptor. leave() after a true enter().
bool enter() noexcept;
void leave() noexcept;
void detach() noexcept;                    // between enter() and leave(), before closing the descriptor
// The file's bytes up to `offset` are whole rounds. Ignored once cut() has frozen the output: the
// writes skipped since then may have left the round partial (a buffer header without its data).
void mark_whole(uint64_t offset) noexcept;
// Fork child: the descriptor is the parent's business; forget it without touching it.
void forget() noexcept;

// The ending side (async-signal-safe; any thread but the writer's). Freezes the output (writes after
// this do nothing), waits at most `wait_ms` for a write under way, then truncates the file to its last
// whole round. Idempotent. Returns whether the file was cut back (false: no file, nothing whole yet,
// or the file already ended there).
bool cut(int wait_ms) noexcept;
// cut()'s first step alone (tests: what the writer does between it and the rest of cut()).
void freeze() noexcept;

}  // namespace mlpd::output_cut
