// Mono's AOT images loaded in this process. Their methods run without jit_done and without
// enter/leave events (issue 33): the Mono runtime gives one counter per image ("AOT image loaded:
// NAME", which the report's calls section reads) and `verbose`'s calls notice.
#pragma once

#include <string>
#include <vector>

namespace mlpd::hooks {

// The file names ("mscorlib.dll.so") of the loaded modules named *.dll.so / *.exe.so that export
// mono_aot_file_info. Any thread; scans the loader's list again only when it grew.
std::vector<std::string> aot_images();

}  // namespace mlpd::hooks
