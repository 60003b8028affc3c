// The process around the agent (agent.cpp, agent_instance.cpp): where its lines go (say), the one
// agent per process, and the hooks into the process: the runtime's shutdown, exit, fork, the dump
// signal, LogProfiler.TriggerHeapshot's wait, and the environment a `nochildren` child gets.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "mlpd/agent/options.h"

namespace mlpd::agent {

class Agent;

// Attach: the lines go back to `mlpd attach` (attach_entry.cpp), not to the program's stderr.
extern std::string* g_capture;
// One line to the program's stderr (or to g_capture).
void say(const std::string& line);

// Dumps asked for outside the helper thread: by the dump signal (dumpsignal=, counted in its handler)
// and by LogProfiler.TriggerHeapshot() in ring mode. The helper performs them (service_requests()).
extern std::atomic<uint64_t> g_signal_requests;
extern std::atomic<uint64_t> g_trigger_requests;
extern std::atomic<uint64_t> g_triggers_done;  // TriggerHeapshot dumps served (their callers wait for them)
extern int g_dump_signal;  // the signal whose handler is ours (0: none)
void on_dump_signal(int);

// One agent per process, never destroyed: threads may still be inside a callback at exit.
extern Agent* g_agent;
extern std::atomic<bool> g_started;
// Attach: the metadata of the last detached agent (what it described; it seeds the next file). One
// copy: the detached agent's own store is emptied.
extern std::vector<uint8_t>* g_detached_metadata;
extern bool g_hooks_registered;  // atexit and pthread_atfork: once per process

void on_runtime_shutdown_end();
bool live_round_now(int limit_ms);  // runtime::Env::live_round
void at_exit();
// The dump signal's default action back (a fork child, a detach): nothing would dump any more.
void give_back_dump_signal();
void fork_child();
void install_dump_signal(const Options& o);
void after_trigger_heapshot();
void remove_agent_from_environment();

}  // namespace mlpd::agent
