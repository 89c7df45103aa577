#include "CShims.h"

// scripts/build-stamp writes BuildStamp.generated.h (ignored by git), and scripts/build-release
// runs it before it builds the binary that ships; a build from a tarball, or a plain
// `swift build`, has none and says "unknown" rather than failing.
#if __has_include("BuildStamp.generated.h")
#include "BuildStamp.generated.h"
#endif
#ifndef FTE_BUILD_REVISION
#define FTE_BUILD_REVISION "unknown"
#endif
#ifndef FTE_BUILD_SWIFT_VERSION
#define FTE_BUILD_SWIFT_VERSION "unknown"
#endif

const char *fte_build_revision(void) { return FTE_BUILD_REVISION; }

const char *fte_build_swift_version(void) { return FTE_BUILD_SWIFT_VERSION; }
