// SPDX-License-Identifier: GPL-2.0-or-later
//
// sanecp SOURCE... DEST: copies at the device's own speed and returns when the data is on the device.
#include "cli_output.h"
#include "destination.h"
#include "i18n.h"
#include "job_queue.h"
#include "manifest.h"
#include "source_share.h"
#include "sys.h"

#include <CLI/CLI.hpp>

#include <atomic>
#include <clocale>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace sanecopy;

namespace {

int terminal_width()
{
    struct winsize ws {};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
        return ws.ws_col;
    return 80;
}

// Prints what the engine reports, for one job or for several at once (--to, one a device): a row of progress
// each, redrawn together. Progress comes from the engine's ticker thread, events from the copying threads: one
// mutex keeps their lines whole.
class Printer {
public:
    // |labels|: each destination, as its row and its messages name it; one (unnamed) for a single copy.
    Printer(bool json, bool tty, bool move, std::vector<std::string> labels)
        : json_(json),
          tty_(tty),
          move_(move),
          labels_(std::move(labels)),
          rows_(labels_.size()),
          last_(labels_.size()),
          finished_(labels_.size())
    {}

    void on_progress(std::size_t row, const ProgressSnapshot &s)
    {
        std::lock_guard lock(mutex_);
        // The ticker may send a job's last snapshot again after it ended: its row and its result line stand.
        if (finished_[row])
            return;
        last_[row] = s;
        if (quiet_bar_)
            return;
        if (json_) {
            print_json(row, cli::json_progress(s));
        } else if (tty_) {
            rows_[row] = cli::progress_line(s, terminal_width() - 1 - label_columns());
            draw();
        }
    }

    void on_event(std::size_t row, const JobEvent &e)
    {
        std::lock_guard lock(mutex_);
        if (e.kind == JobEvent::Kind::Done)
            return;
        if (json_)
            print_json(row, cli::json_event(e));
        if (e.kind == JobEvent::Kind::FileDone && !e.message.empty()) {
            clear_bar();
            std::fprintf(stderr, "sanecp: %s%s: %s\n", prefix(row).c_str(), e.path.c_str(), e.message.c_str());
        }
        if (e.kind == JobEvent::Kind::Error || e.kind == JobEvent::Kind::Skipped) {
            clear_bar();
            const std::string line = e.kind == JobEvent::Kind::Skipped
                                         ? i18nc("%1 says which file and why", "skipped: %1", e.message)
                                         : e.message;
            std::fprintf(stderr, "sanecp: %s%s\n", prefix(row).c_str(), line.c_str());
        }
    }

    // After Ctrl-C: the cancel message stays the last thing on the terminal, no bar is drawn over it.
    void stop_bar()
    {
        std::lock_guard lock(mutex_);
        clear_bar();
        quiet_bar_ = true;
    }

    void finish(std::size_t row, const JobSummary &summary)
    {
        std::lock_guard lock(mutex_);
        finished_[row] = true;
        clear_bar();
        say_manifest(summary);
        if (json_) {
            print_json(row, cli::json_done(summary, last_[row]));
            return;
        }
        if (move_ && !summary.complete() && !summary.cancelled)
            say(i18n("the sources of the files named above are still where they were; every file has a complete "
                     "copy on one side or the other."));
        if (summary.device_removed) {
            // Said on any output: a script's log is read after a pulled stick too.
            say(prefix(row) + i18n("the device was removed before the copy finished. Files reported done are "
                                   "complete on it; plug it in again and run the same command to copy the rest."));
            return;
        }
        if (!tty_)
            return;
        if (summary.cancelled)
            std::printf("%s%s\n", prefix(row).c_str(),
                        i18n("Cancelled. Nothing half-written was left behind.").c_str());
        else if (summary.files_copied > 0 || summary.ok())
            print_done(row, summary);
    }

private:
    // "DEST: " before a row's messages, when there are several.
    std::string prefix(std::size_t row) const { return labels_.size() > 1 ? labels_[row] + ": " : std::string(); }
    int label_columns() const { return labels_.size() > 1 ? kLabelColumns + 1 : 0; }
    static constexpr int kLabelColumns = 16;

    void print_json(std::size_t row, std::string record) const
    {
        // Several jobs: each record says whose it is.
        if (labels_.size() > 1 && record.size() > 1)
            record.insert(1, "\"destination\":" + cli::json_string(labels_[row]) + ",");
        std::fputs((record + "\n").c_str(), stdout);
        std::fflush(stdout);
    }

    void print_done(std::size_t row, const JobSummary &summary)
    {
        const double rate = summary.seconds > 0 ? double(summary.bytes) / summary.seconds : 0;
        const std::string bytes = cli::human_bytes(double(summary.bytes));
        const std::string speed = cli::human_bytes(rate);
        const uint64_t files = summary.files_copied;
        std::string line;
        if (!summary.complete())
            line =
                i18np("Partly done: %2 in %1 file, %3/s.", "Partly done: %2 in %1 files, %3/s.", files, bytes, speed);
        else if (move_)
            line = i18np("Moved: %2 in %1 file, %3/s.", "Moved: %2 in %1 files, %3/s.", files, bytes, speed);
        else
            line = i18np("Done: %2 in %1 file, %3/s.", "Done: %2 in %1 files, %3/s.", files, bytes, speed);
        // A share has nothing to unplug: there "done" means the server has it on its disk.
        const std::string where = last_[row].share     ? i18n("It is on the share.")
                                  : summary.complete() ? i18n("It is on the device: safe to unplug.")
                                                       : i18n("It is on the device.");
        std::printf("%s%s %s\n", prefix(row).c_str(), line.c_str(), where.c_str());
    }

    static void say(const std::string &text) { std::fprintf(stderr, "sanecp: %s\n", text.c_str()); }

    static void say_manifest(const JobSummary &summary)
    {
        if (summary.manifest_path.empty())
            return;
        const auto [dir, name] = split_path(summary.manifest_path);
        say(i18np("%1 checksum in %2 (check with: cd %3 && sha256sum -c %4)",
                  "%1 checksums in %2 (check with: cd %3 && sha256sum -c %4)", summary.manifest_files,
                  summary.manifest_path, dir, name));
    }

    // Every row, the cursor left at the start of the first so the next draw overwrites them.
    void draw()
    {
        std::string out = "\r";
        for (std::size_t i = 0; i < rows_.size(); ++i) {
            if (labels_.size() > 1) // the stick's own name: the last part of where it is mounted
                out += cli::padded_name(split_path(strip_trailing_slashes(labels_[i])).second, kLabelColumns) + " ";
            out += rows_[i] + "\x1b[K";
            if (i + 1 < rows_.size())
                out += "\n";
        }
        if (rows_.size() > 1)
            out += "\r\x1b[" + std::to_string(rows_.size() - 1) + "A";
        std::fputs(out.c_str(), stdout);
        std::fflush(stdout);
        bar_shown_ = true;
    }

    // The rows wiped, the cursor where the first was: what is printed next takes their place.
    void clear_bar()
    {
        if (!bar_shown_)
            return;
        std::fputs("\r\x1b[J", stdout); // from the first row to the end of the screen
        std::fflush(stdout);
        bar_shown_ = false;
    }

    const bool json_, tty_, move_;
    const std::vector<std::string> labels_;
    std::mutex mutex_;
    std::vector<std::string> rows_;
    std::vector<ProgressSnapshot> last_;
    std::vector<bool> finished_; // by row: its result was printed
    bool bar_shown_ = false;
    bool quiet_bar_ = false;
};

// One job's reports, to its row of the printer.
class RowObserver : public JobObserver {
public:
    RowObserver(std::shared_ptr<Printer> printer, std::size_t row) : printer_(std::move(printer)), row_(row) {}
    void on_progress(const ProgressSnapshot &s) override { printer_->on_progress(row_, s); }
    void on_event(uint64_t, const JobEvent &e) override { printer_->on_event(row_, e); }
    // Said as each job ends: the fast stick's "safe to unplug" comes when it is, not with the slowest's.
    void on_finished(uint64_t, const JobSummary &summary) override { printer_->finish(row_, summary); }

private:
    const std::shared_ptr<Printer> printer_;
    const std::size_t row_;
};

// sanecp --check MANIFEST: every file read back from its device and its SHA-256 compared.
int check(const std::string &manifest, bool json)
{
    const JobControl control;
    std::size_t files = 0, failed = 0;
    Status s = check_manifest(manifest, control, [&](const CheckedFile &f) {
        ++files;
        const bool ok = f.result == CheckedFile::Result::Ok;
        failed += !ok;
        static const char *const words[] = {"ok", "mismatch", "missing", "unreadable"};
        const char *word = words[int(f.result)];
        if (json)
            std::printf("{\"type\":\"checked\",\"name\":%s,\"result\":\"%s\"}\n", cli::json_string(f.name).c_str(),
                        word);
        else if (ok)
            std::printf("%s: OK\n", f.name.c_str()); // sha256sum -c's words, which scripts look for
        else
            std::printf("%s: FAILED (%s)\n", f.name.c_str(),
                        f.result == CheckedFile::Result::Mismatch ? i18n("differs from its checksum").c_str()
                                                                  : f.status.message().c_str());
    });
    if (!s) {
        std::fprintf(stderr, "sanecp: %s\n", s.message().c_str());
        return 1;
    }
    if (failed)
        std::fprintf(stderr, "sanecp: %s\n",
                     i18np("%2 of %1 file did not match %3", "%2 of %1 files did not match %3", files, failed, manifest)
                         .c_str());
    return failed ? 1 : 0;
}

// sanecp's help in its own words. The one positional takes SOURCE... DEST together: CLI11 before 2.4 lets a
// vector positional eat the DEST a second positional would need, and 2.4 refuses a name with spaces or dots in
// it, so the usage line and the positional's label are written here instead of derived from the name. The
// default "TEXT", "REQUIRED" and "Excludes: ..." annotations say nothing a reader of this help needs.
class HelpFormatter : public CLI::Formatter {
public:
    std::string make_usage(const CLI::App *, std::string name) const override
    {
        return i18nc("the command's usage line; %1 is its name", "Usage: %1 [OPTIONS] SOURCE... DEST", name) + "\n";
    }
    std::string make_option_name(const CLI::Option *opt, bool positional) const override
    {
        if (positional)
            return "SOURCE... DEST";
        // "--manifest{}" is how a flag with an optional value is declared; it reads "--manifest[=FILE]".
        std::string name = CLI::Formatter::make_option_name(opt, positional);
        if (const auto brace = name.find('{'); brace != std::string::npos)
            name = name.substr(0, brace) + "[=FILE]";
        return name;
    }
    std::string make_option_opts(const CLI::Option *opt) const override
    {
        return opt->get_positional() || opt->get_type_name().empty() ? std::string() : " " + opt->get_type_name();
    }
};

// What the command line asked for.
struct Options {
    std::vector<std::string> paths;
    std::vector<std::string> to; // --to: several destinations at once; |paths| are then all sources
    std::string probe, manifest, check_path;
    bool json = false, overwrite = false, skip_existing = false, rename_existing = false;
    bool verify = false, rename_invalid = false, move = false, fit = false, resume = false;
    CLI::Option *manifest_opt = nullptr; // given, with or without a FILE
};

// What is copied and how names already taken are treated.
void add_copy_options(CLI::App &app, Options &o)
{
    app.add_option("paths", o.paths, i18n("Files and folders to copy, then where to"))->expected(1, -1);
    app.add_option(
           "--to", o.to,
           i18n("Copy onto DEST, and onto every other --to at once: give --to once for each device (a stick "
                "each, as for a class); then every argument is a source. Each device is written at its own speed, "
                "and the source is read once while what the faster ones have read ahead fits in memory "
                "(a quarter of what is free, at most 1 GiB)"))
        ->type_name("DEST")
        ->expected(1)
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll); // one DEST each --to, every --to kept
    app.add_flag("--json", o.json, i18n("Print progress and events as NDJSON on stdout"));
    auto *ow = app.add_flag(
        "--overwrite", o.overwrite,
        i18n("Replace existing files (by rename, once the new file is on the device), never one this copy wrote"));
    auto *sk = app.add_flag("--skip-existing", o.skip_existing, i18n("Leave existing files alone and go on"));
    auto *rn =
        app.add_flag("--rename-existing", o.rename_existing, i18n("Copy next to existing files as \"name (1).ext\""));
    ow->excludes(sk)->excludes(rn);
    sk->excludes(rn);
    app.add_flag("--move", o.move,
                 i18n("Move: each source file is removed once its copy is on the device (and verified, with --verify), "
                      "each source folder once it is empty; on the same filesystem, one rename (with --manifest, the "
                      "sums are then read from the renamed files). Never leaves a file without a complete copy; a "
                      "source that was not copied, or that changed while it was copied, stays where it is"));
    app.add_flag(
        "--verify", o.verify,
        i18n("Read every file back from the device once it is there, and compare XXH3 hashes with the source"));
    o.manifest_opt = app.add_flag("--manifest{}", o.manifest,
                                  i18n("Write the SHA-256 of every file copied into a manifest on the destination, "
                                       "which `sha256sum -c` checks: SHA256SUMS in DEST (beside it when DEST is a "
                                       "file), or --manifest=FILE. The source is read once; the sums are of its "
                                       "bytes as copied"));
    app.add_flag("--fit", o.fit,
                 i18n("When the device has not room for everything, copy the files that fit, in order, instead of "
                      "nothing; each one left out is reported (exit code 1). With --resume, what the interrupted "
                      "run left on the device is counted as there"));
    app.add_flag(
        "--resume", o.resume,
        i18n("Finish a copy that was interrupted (killed, crashed, logged out, the stick pulled): files at the "
             "destination with the source's size and modification time count as copied (with --verify, only if "
             "their bytes are the source's), the rest is copied (a big file from where its part file's bytes stop "
             "matching the source, which every run does)"));
    app.add_flag("--rename-invalid", o.rename_invalid,
                 i18n("Copy names FAT/exFAT refuse (: ? * \" < > | \\, trailing dots or spaces) under a safe name, "
                      "instead of skipping them"));
}

// The modes that copy nothing: --probe and --check.
void add_other_modes(CLI::App &app, Options &o)
{
    app.add_option("--probe", o.probe,
                   i18n("Print what SaneCopy finds out about the device behind FOLDER (filesystem, its "
                        "limits, removable, the device whose dirty pages are counted) as JSON, and exit"))
        ->type_name("FOLDER");
    app.add_option("--check", o.check_path,
                   i18n("Read every file MANIFEST lists back from its device (not from the page cache), compare "
                        "SHA-256 sums, and exit 1 on any mismatch or missing file; copies nothing"))
        ->type_name("MANIFEST");
}

int probe_only(const Options &o)
{
    if (!o.paths.empty()) {
        std::fprintf(stderr, "sanecp: %s\n", i18n("--probe takes one folder and copies nothing").c_str());
        return 2;
    }
    Result<DeviceInfo> info = probe_device(o.probe);
    if (!info.ok()) {
        std::fprintf(stderr, "sanecp: %s\n", info.status().message().c_str());
        return 1;
    }
    std::printf("%s\n", cli::json_device(info.value()).c_str());
    return 0;
}

JobSpec spec_from(Options &o)
{
    JobSpec spec;
    spec.sources = std::move(o.paths);
    spec.verify = o.verify;
    spec.manifest = o.manifest_opt->count() > 0;
    spec.manifest_path = o.manifest;
    spec.move = o.move;
    spec.rename_invalid = o.rename_invalid;
    spec.resume = o.resume;
    spec.fit_to_space = o.fit;
    // A million files take seconds to walk: the copy starts meanwhile, and nothing is published before the plan
    // has found room for all of it.
    spec.count_while_copying = true;
    spec.conflict = o.overwrite         ? ConflictPolicy::Overwrite
                    : o.skip_existing   ? ConflictPolicy::Skip
                    : o.rename_existing ? ConflictPolicy::Rename
                                        : ConflictPolicy::Refuse;
    return spec;
}

// One spec a destination: the last path, or each --to (then every path is a source).
std::vector<JobSpec> specs_from(Options &o)
{
    std::vector<std::string> destinations = std::move(o.to);
    if (destinations.empty()) {
        destinations.push_back(o.paths.back());
        o.paths.pop_back();
    }
    JobSpec spec = spec_from(o);
    std::vector<JobSpec> specs;
    // Several: one group, so the source is read once for all (source_share.h).
    const auto share = SourceShare::for_jobs(destinations.size());
    for (std::size_t i = 0; i < destinations.size(); ++i) {
        specs.push_back(spec);
        specs.back().destination = destinations[i];
        specs.back().source_share = share;
        specs.back().share_member = unsigned(i);
    }
    return specs;
}

// The signal that stopped the job, once one did; shared with the detached signal thread, which may outlive
// main's locals.
using Interruption = std::shared_ptr<std::atomic<int>>;

// Ctrl-C cancels cleanly: part files are removed and the device is left with nothing to write. SIGTERM and
// SIGHUP (the session ending, not the user changing their mind) interrupt: what is on the device stays for a
// rerun with --resume. The signals are taken by one thread with sigwait, so no engine thread is interrupted in a
// system call; they were blocked in every thread before any was started (block_stop_signals).
void watch_signals(sigset_t signals, const std::vector<std::shared_ptr<Job>> &jobs,
                   const std::shared_ptr<Printer> &printer, const Interruption &interrupted_by)
{
    std::thread([signals, jobs, printer, interrupted_by]() mutable {
        int sig = 0;
        if (sigwait(&signals, &sig) == 0) {
            interrupted_by->store(sig);
            printer->stop_bar();
            if (sig == SIGINT) {
                std::fprintf(stderr, "\nsanecp: %s\n", i18n("cancelling; removing partial files...").c_str());
                for (const auto &job : jobs)
                    job->cancel();
            } else {
                std::fprintf(stderr, "\nsanecp: %s\n",
                             i18n("stopping; rerun with --resume to finish the copy").c_str());
                for (const auto &job : jobs)
                    job->interrupt();
            }
        }
        // A second signal ends the process at once; a part file may then stay behind, never a half file
        // under a real name.
        if (sigwait(&signals, &sig) == 0)
            _exit(128 + sig);
    }).detach();
}

sigset_t block_stop_signals()
{
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    return signals;
}

// The copies, one job a destination, each on its device's own lane of the queue (so at once on several
// devices); the exit code is 0 only when every one is complete.
int run_copies(const std::vector<JobSpec> &specs, bool json)
{
    const sigset_t signals = block_stop_signals();
    raise_open_file_limit(); // batches of small files hold a descriptor each (engine/base/sys.h)
    std::vector<std::string> labels;
    labels.reserve(specs.size());
    for (const JobSpec &spec : specs)
        labels.push_back(specs.size() > 1 ? spec.destination : std::string());
    auto printer = std::make_shared<Printer>(json, ::isatty(STDOUT_FILENO), specs.front().move, labels);
    JobQueue queue;
    std::vector<std::shared_ptr<Job>> jobs;
    jobs.reserve(specs.size());
    for (std::size_t i = 0; i < specs.size(); ++i)
        jobs.push_back(queue.submit(specs[i], std::make_shared<RowObserver>(printer, i)));
    auto interrupted_by = std::make_shared<std::atomic<int>>(0);
    watch_signals(signals, jobs, printer, interrupted_by);
    bool complete = true, cancelled = false;
    for (const auto &job : jobs) {
        const JobSummary summary = job->wait(); // its lines were printed as it ended (RowObserver)
        complete = complete && summary.complete();
        cancelled = cancelled || summary.cancelled;
    }
    if (cancelled && interrupted_by->load() != 0)
        return 128 + interrupted_by->load();
    return complete ? 0 : 1;
}

// An argument that reads as a network URL (smb://, sftp://: what Dolphin's network folders show) and names no local
// path is refused: taken as a path, it would become a folder called "smb:" in the working directory.
bool names_a_network_url(const std::vector<std::string> &paths)
{
    for (const std::string &p : paths) {
        struct stat st {};
        if (looks_like_network_url(p) && ::lstat(p.c_str(), &st) != 0) {
            std::fprintf(stderr, "sanecp: %s\n",
                         i18n("%1 is a network address, not a path: mount the share (an fstab line, mount -t cifs, "
                              "sshfs) or open it in Dolphin through kio-fuse, and give that folder's path",
                              p)
                             .c_str());
            return true;
        }
    }
    return false;
}

// What is wrong with a copy's command line that CLI11 can't tell, or "".
std::string usage_problem(const Options &o)
{
    if (o.paths.size() < (o.to.empty() ? 2U : 1U))
        return i18n("give one or more sources, then the destination (see --help)");
    if (o.to.size() > 1 && o.move)
        return i18n("--move takes one destination: a file can be moved to one place only");
    if (o.to.size() > 1 && !o.manifest.empty())
        return i18n("--manifest=FILE takes one destination; with several --to, each gets its own SHA256SUMS");
    return {};
}

} // namespace

// CLI11 reports a bad command line by exceptions, caught around parse(); any other would be a bug that should end
// the program loudly.
int main(int argc, char **argv) // NOLINT(bugprone-exception-escape)
{
    // The messages in the user's language (LANGUAGE, LC_MESSAGES), and the characters of their names, not the
    // rest: numbers keep a point, as the JSON output and a script reading the lines need.
    std::setlocale(LC_MESSAGES, "");
    std::setlocale(LC_CTYPE, "");
    CLI::App app {i18n("Copies files at the device's own speed. When sanecp returns, the data is on the device: "
                       "\"done\" means safe to unplug.\nFolders are copied recursively, symlinks as links."),
                  "sanecp"};
    auto formatter = std::make_shared<HelpFormatter>();
    formatter->label("Positionals", i18nc("the heading of the help's arguments", "Positionals"));
    app.formatter(formatter);
    app.option_defaults()->group(i18nc("the heading of the help's options", "Options"));
    app.footer(i18n("Exit codes: 0 everything requested is on the device (files --skip-existing left alone count as "
                    "done); 1 something was not copied: a failure, a file refused before the first byte (too big for "
                    "the filesystem, a name it can't store, a special file), or the device removed (each is on "
                    "stderr); 2 usage error; 130 cancelled with Ctrl-C (nothing half-written is left), 143 and 129 "
                    "stopped by SIGTERM and SIGHUP (big files' part files stay for --resume). With --check: "
                    "0 every file matches, 1 a mismatch, a missing or unreadable file, or no manifest."));
    // Made again, for their words and their group's name: CLI11 makes the help flag with the App.
    app.set_help_flag("-h,--help", i18n("Print this help message and exit"));
    Options o;
    add_copy_options(app, o);
    add_other_modes(app, o);
    app.set_version_flag("--version", std::string("sanecp ") + SANECOPY_VERSION,
                         i18n("Display program version information and exit"));
    try {
        app.parse(argc, argv);
    } catch (const CLI::Success &e) {
        return app.exit(e);
    } catch (const CLI::ParseError &e) {
        app.exit(e);
        return 2;
    }
    if (!o.probe.empty())
        return probe_only(o);
    if (!o.check_path.empty()) {
        if (!o.paths.empty()) {
            std::fprintf(stderr, "sanecp: %s\n", i18n("--check takes one manifest and copies nothing").c_str());
            return 2;
        }
        return check(o.check_path, o.json);
    }
    if (const std::string problem = usage_problem(o); !problem.empty()) {
        std::fprintf(stderr, "sanecp: %s\n", problem.c_str());
        return 2;
    }
    if (names_a_network_url(o.paths) || names_a_network_url(o.to))
        return 2;
    return run_copies(specs_from(o), o.json);
}
