// neardup-mpi's entry point: the command line (the same options as neardup's pairs and dedup),
// then the run (run.h).
#include "run.h"


int main(int argc, char** argv) {
  using namespace neardup;
  cli::ask_huge_pages_for_the_heaps(argv);  // before MPI_Init: the exec keeps the rank's pid and environment
  MPI_Init(&argc, &argv);
  // mpirun ends the other ranks with SIGTERM when one dies: their temporary outputs go too.
  cli::install_signal_handlers("neardup-mpi");
  cli::return_large_blocks_at_once();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int rc = kExitOk;
  {
    mpi::Comm comm;
    CLI::App app{"neardup-mpi: neardup pairs and dedup over MPI ranks, with the same outputs as one process", "neardup-mpi"};
    app.require_subcommand(1);
    app.set_version_flag("--version", [] { return version_info(); });
    cli::Options pairs_o, dedup_o;
    CLI::App* pairs = app.add_subcommand("pairs", "Write every near-duplicate pair: id1 TAB id2 TAB similarity");
    cli::add_pairs_dedup_options(pairs, pairs_o);
    pairs->add_option("-o,--output", pairs_o.output, "Output file (default: stdout)");
    CLI::App* dedup = app.add_subcommand("dedup", "Remove near-duplicates: write the kept records exactly as they were");
    cli::add_pairs_dedup_options(dedup, dedup_o);
    cli::add_keep_options(dedup, dedup_o);
    dedup->add_option("-o,--output", dedup_o.output, "Output file for the kept records ('-' for stdout)");
    dedup->add_option("--output-dir", dedup_o.output_dir,
                      "Instead of -o: each input file's kept records to DIR under the same name, written by the rank that read it");
    dedup->add_option("--removed", dedup_o.removed, "Write removed_id TAB kept_id TAB similarity per removed document");
    dedup->add_option("--clusters", dedup_o.clusters, "Write cluster TAB id TAB kept|removed per clustered document");
    app.footer("Exit codes as neardup's: 0 ok, 1 internal error, 2 usage error, 3 bad input data, 4 I/O error.");
    // What runs in one process only, named as such rather than as an unknown option.
    const auto one_process = [](const std::string& flag, const char* command) {
      return [flag, command] { throw UsageError(flag + " runs in one process (neardup " + command + " " + flag + ")"); };
    };
    dedup->add_option_function<std::string>("--against", [f = one_process("--against", "dedup")](const std::string&) { f(); })->group("");
    dedup->add_flag_callback("--add-kept", one_process("--add-kept", "dedup"))->group("");
    pairs->add_option_function<std::string>("--top", [f = one_process("--top", "pairs")](const std::string&) { f(); })->group("");
    // Every rank parses the same arguments: rank 0 speaks.
    if (const int bad = cli::check_command_words(app, argc, argv, "neardup-mpi", rank != 0); bad != 0) rc = bad;
    try {
      if (rc == kExitOk) {
        app.parse(argc, argv);
        const bool is_dedup = dedup->parsed();
        mpi::Run run(comm, is_dedup ? dedup : pairs, is_dedup ? dedup_o : pairs_o, is_dedup);
        rc = run.go();
      }
    } catch (const CLI::CallForHelp& e) {
      rc = rank == 0 ? app.exit(e) : 0;
    } catch (const CLI::CallForAllHelp& e) {
      rc = rank == 0 ? app.exit(e) : 0;
    } catch (const CLI::CallForVersion& e) {
      rc = rank == 0 ? app.exit(e) : 0;
    } catch (const CLI::ParseError& e) {
      rc = rank == 0 ? cli::report_parse_error(app, e, "neardup-mpi") : kExitUsage;
    } catch (const Error& e) {  // from the parse (one-process options): every rank the same
      if (rank == 0) std::fprintf(stderr, "neardup-mpi: error: %s\n", cli::flag_text(e).c_str());
      rc = cli::exit_code(e);
    }
  }
  MPI_Finalize();
  return rc;
}
