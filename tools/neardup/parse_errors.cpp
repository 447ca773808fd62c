// Command-line mistakes as one line, "PROGRAM: error: ...; see 'PROGRAM COMMAND --help'", with
// the nearest command or option: neardup's and neardup-mpi's.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"

namespace neardup::cli {
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

}  // namespace

// A word where a command was expected that names none: "unknown command", with the nearest one.
// (CLI11 would take it for an input of no command and say only that a command is required.)
int check_command_words(CLI::App& app, int argc, char** argv, const char* program, bool quiet) {
  CLI::App* cur = &app;
  std::string path = program;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.starts_with("-")) return 0;  // options (--help, --version) or the command's own
    const std::vector<std::string> names = subcommand_names(*cur);
    if (names.empty()) return 0;
    CLI::App* next = nullptr;
    for (CLI::App* sub : cur->get_subcommands([](const CLI::App*) { return true; }))
      if (sub->get_name() == a) next = sub;
    if (!next) {
      if (!quiet)
        std::fprintf(stderr, "%s: error: '%s' is not a command of %s%s; the commands are %s (see '%s --help')\n", program, a.c_str(),
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
int report_parse_error(CLI::App& app, const CLI::ParseError& e, const char* program) {
  CLI::App* cur = &app;
  std::string path = program;
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
  std::fprintf(stderr, "%s: error: %s%s; see '%s --help'\n", program, msg.c_str(), hint.c_str(), path.c_str());
  return neardup::kExitUsage;
}


}  // namespace neardup::cli
