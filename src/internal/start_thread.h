// Starting a thread, where failing to is a resource limit the user can act on (no memory for its
// stack, ulimit -u), not an internal error: std::thread throws std::system_error, reported here
// as an Error that says what to do.
#pragma once

#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "neardup/error.h"

namespace neardup::internal {

template <class F>
std::thread start_thread(F&& fn) {
  try {
    return std::thread(std::forward<F>(fn));
  } catch (const std::system_error& e) {
    throw Error(std::string("cannot start a thread: ") + e.code().message() +
                "; use fewer threads (-j) or raise the limits on memory and processes (ulimit -v, -u)");
  }
}

}  // namespace neardup::internal
