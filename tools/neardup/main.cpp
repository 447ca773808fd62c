// neardup: find, cluster and remove near-duplicate documents.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>
#include <vector>
#include <cstdlib>
#include <functional>
#include <iostream>

#include "commands.h"
#include "neardup/neardup.h"

namespace {


// Edit distance with transpositions (optimal string alignment), for "did you mean".
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The candidate nearest to `word` (a few letters off, or one it begins), as
// " (did you mean X?)", or "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const auto bare = [](const std::string& s) { return s.substr(std::min(s.find_first_not_of('-'), s.size())); };
  const std::string w = bare(word);
  std::string best;
  size_t best_d = std::max<size_t>(1, w.size() / 4) + 1;  // a typo or two, not another word
  for (const std::string& c : candidates) {
    const std::string b = bare(c);
    const size_t d = b.starts_with(w) && w.size() >= 3 ? 1 : edit_distance(w, b);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best.empty() ? "" : " (did you mean " + best + "?)";
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
  return names;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// A word where a command was expected that names none: "unknown command", with the nearest one.
// (CLI11 would take it for an input of no command and say only that a command is required.)
int check_command_words(CLI::App& app, int argc, char** argv) {
  CLI::App* cur = &app;
  std::string path = "neardup";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.starts_with("-")) return 0;  // options (--help, --version) or the command's own
    const std::vector<std::string> names = subcommand_names(*cur);
    if (names.empty()) return 0;
    CLI::App* next = nullptr;
    for (CLI::App* sub : cur->get_subcommands([](const CLI::App*) { return true; }))
      if (sub->get_name() == a) next = sub;
    if (!next) {
      std::fprintf(stderr, "neardup: error: '%s' is not a command of %s%s; the commands are %s (see '%s --help')\n", a.c_str(),
                   path.c_str(), did_you_mean(a, names).c_str(), joined(names).c_str(), path.c_str());
      return neardup::kExitUsage;
    }
    cur = next;
    path += " " + a;
    if (cur->get_subcommands([](const CLI::App*) { return true; }).empty()) return 0;
  }
  return 0;
}

// A parse error as one line, "neardup: error: ...", with the nearest option for an unknown one.
int report_parse_error(CLI::App& app, const CLI::ParseError& e) {
  CLI::App* cur = &app;
  std::string path = "neardup";
  while (!cur->get_subcommands().empty()) {
    cur = cur->get_subcommands().front();
    path += " " + cur->get_name();
  }
  std::string msg = e.what();
  if (!msg.empty()) msg[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(msg[0])));
  std::string hint;
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && msg.find("subcommand") != std::string::npos)
    msg = "a command is required: " + joined(subcommand_names(*cur));
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    std::vector<std::string> flags;
    for (const CLI::Option* opt : cur->get_options()) {
      for (const std::string& l : opt->get_lnames()) flags.push_back("--" + l);
      for (const std::string& s : opt->get_snames()) flags.push_back("-" + s);
    }
    // The first unexpected word that looks like an option.
    const size_t colon = msg.find(": ");
    std::string rest = colon == std::string::npos ? "" : msg.substr(colon + 2);
    for (size_t p = 0; p < rest.size();) {
      const size_t sp = rest.find(' ', p);
      std::string word = rest.substr(p, sp == std::string::npos ? std::string::npos : sp - p);
      if (word.starts_with("-")) {
        word = word.substr(0, word.find('='));
        hint = did_you_mean(word, flags);
        break;
      }
      if (sp == std::string::npos) break;
      p = sp + 1;
    }
  }
  std::fprintf(stderr, "neardup: error: %s%s; see '%s --help'\n", msg.c_str(), hint.c_str(), path.c_str());
  return neardup::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace neardup;
  cli::ask_huge_pages_for_the_heaps(argv);
  cli::install_signal_handlers("neardup");
  cli::return_large_blocks_at_once();
  cli::raise_open_file_limit();
  cli::remember_command_line(argc, argv);
  // Kernel override for tests and benchmarks (the library itself never reads the environment).
  if (const char* forced = std::getenv("NEARDUP_FORCE_ISA"); forced && *forced) {
    const auto isa = parse_isa(forced);
    if (!isa) {
      std::fprintf(stderr, "neardup: error: NEARDUP_FORCE_ISA=%s is not one of scalar, avx2, avx512, avx512vbmi\n", forced);
      return kExitUsage;
    }
    try {
      force_isa(*isa);
    } catch (const Error& e) {
      std::fprintf(stderr, "neardup: error: NEARDUP_FORCE_ISA: %s\n", cli::flag_text(e).c_str());
      return kExitUsage;
    }
  }

  CLI::App app{"neardup: find, cluster and remove near-duplicate documents (MinHash + LSH, bottom-k + exact join, SimHash + permuted tables; exact verification)",
               "neardup"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] { return version_info(); });
  std::function<int()> run;
  cli::add_pairs_and_dedup(app, run);
  cli::add_simhash_plan(app, run);
  cli::add_tune(app, run);
  cli::add_index(app, run);
  cli::add_eval(app, run);
  cli::add_explain(app, run);
#ifdef NEARDUP_HAVE_SERVE
  cli::add_serve(app, run);
#endif
  app.footer("Exit codes: 0 ok, 1 internal error, 2 usage error, 3 bad input data, 4 I/O error.\n"
             "Run 'neardup COMMAND --help' for the options of a command.");

  if (const int rc = check_command_words(app, argc, argv); rc != 0) return rc;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return report_parse_error(app, e);
  }
  try {
    return run();
  } catch (const Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "neardup: error: %s\n", cli::flag_text(e).c_str());
    return cli::exit_code(e);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "neardup: error: out of memory; use fewer threads or split the input\n");
    return kExitInternal;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "neardup: internal error: %s; please report it\n", e.what());
    return kExitInternal;
  }
}
