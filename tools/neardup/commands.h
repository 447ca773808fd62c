// Subcommands of the neardup CLI. Argument parsing only; the work is in the library.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace neardup::cli {

/// Adds `pairs` and `dedup` to `app`; `run` is set to the chosen command's action.
void add_pairs_and_dedup(CLI::App& app, std::function<int()>& run);
/// Adds `simhash-plan`.
void add_simhash_plan(CLI::App& app, std::function<int()>& run);
/// Adds `index` and its subcommands.
void add_index(CLI::App& app, std::function<int()>& run);
/// Adds `eval`.
void add_eval(CLI::App& app, std::function<int()>& run);
/// Adds `tune`.
void add_tune(CLI::App& app, std::function<int()>& run);

}  // namespace neardup::cli
