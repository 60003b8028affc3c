// `mlpd attach` / `mlpd detach` for a .NET (CoreCLR) process (docs/attach.md, ".NET"): the runtime's
// diagnostics socket takes the AttachProfiler command (dotnet/diagnostics' IPC protocol, written here
// from its documented layout), which loads libmlpd.so and initializes it for attach with our request;
// the attached agent serves a control socket for the detach. mlpd/runtime/attach_protocol.h holds
// what both sides agree on.
#pragma once

#include <sys/types.h>

#include <string>

namespace mlpd::cli::attach_dotnet {

// The process runs CoreCLR (libcoreclr.so is mapped).
bool is_coreclr(long pid);

// The runtime's diagnostics socket: `dotnet-diagnostic-PID-KEY-socket` in the process's TMPDIR (its
// environment's, else /tmp), KEY its start time in clock ticks; seen through /proc/PID/root when the
// process lives in another mount namespace. Empty with `why` when there is none, or one not the
// process user's.
std::string find_socket(long pid, uid_t uid, std::string& why);

// The AttachProfiler command's bytes: header (magic "DOTNET_IPC_V1\0", u16 size, command set 3,
// command 1, u16 0), then u32 timeout ms, the CLSID, the path (u32 UTF-16 units with the NUL, UTF-16LE),
// u32 length and the client data. Empty when it does not fit the header's u16 size.
std::string attach_message(const std::string& library, const std::string& client_data, uint32_t timeout_ms);

// The runtime's answer to a command: true with its HRESULT when it is a well-formed reply (OK, 0xFF 0x00,
// or error, 0xFF 0xFF); false when `reply` is not one.
bool parse_reply(const std::string& reply, int32_t& hresult);

// 0 done (the agent's lines printed, `answer` has them), 1 refused or failed (one line on stderr).
int attach(long pid, uid_t uid, const std::string& library, const std::string& options, std::string* answer);
int detach(long pid, std::string* answer);

}  // namespace mlpd::cli::attach_dotnet
