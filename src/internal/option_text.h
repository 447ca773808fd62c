// Option references in error texts and reasons, as literals (see option_ref in neardup/error.h):
// OPT("on_error") and OPT_IS("on_error", "skip") are string literals, so they can also name the
// kinds of bad records, which are `const char*`.
#pragma once

#define NEARDUP_OPT(name) "\x1f" name "\x1f"
#define NEARDUP_OPT_IS(name, value) "\x1f" name " " value "\x1f"
