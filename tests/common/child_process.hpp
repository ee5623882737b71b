// SPDX-License-Identifier: Apache-2.0
// Runs a piece of a test in a forked child (or the test program anew) with a time limit, so that a
// call that hangs (dlopen on a FIFO) or dies of a signal (SIGBUS mapping a truncated file) fails the
// test instead of hanging CI or killing the test binary, and so that state a process keeps once
// (gpumath's NCCL load) or reads at startup (the loader's LD_LIBRARY_PATH) starts fresh.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpumath::test {

/// How a child ended and what it wrote.
struct ChildResult {
    /// True when the child exited by itself within the limit (whatever its exit status).
    bool finished = false;
    /// The text `body` returned (or "exception: what()" when it threw).
    std::string output;
    /// How the child ended, for failure messages: "exited with status 0", "killed by signal 7
    /// (Bus error)", "still running after 10 s: killed".
    std::string how;
    /// Wall time from fork to the child's end.
    std::chrono::milliseconds elapsed{0};
};

namespace detail {

// The parent's side: reads the child's output from `fd` until it ends or `limit` passes (then kills
// the child), reaps it and says how it ended.
inline void wait_for_child(pid_t pid, int fd, std::chrono::steady_clock::time_point start, std::chrono::seconds limit,
                           ChildResult& result) {
    const auto deadline = start + limit;
    bool open = true;
    while (open) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        pollfd p{fd, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) break;
        char buffer[4096];
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) open = false;  // end of file: the child closed its end (exited)
        else result.output.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fd);
    int status = 0;
    if (open) {
        ::kill(pid, SIGKILL);
        (void)::waitpid(pid, &status, 0);
        result.how = "still running after " + std::to_string(limit.count()) + " s: killed";
    } else {
        (void)::waitpid(pid, &status, 0);
        result.finished = WIFEXITED(status);
        if (WIFEXITED(status)) result.how = "exited with status " + std::to_string(WEXITSTATUS(status));
        else if (WIFSIGNALED(status))
            result.how =
                "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + ::strsignal(WTERMSIG(status)) + ")";
        else result.how = "ended with wait status " + std::to_string(status);
    }
    result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
}

}  // namespace detail

/// Forks; the child runs `body` (with an alarm as a backstop), sends its text to the parent and
/// exits without running any destructor or test-framework code. The parent waits at most `limit`,
/// then kills the child. The calling process must not hold locks that `body` needs (gtest's own
/// single thread is fine).
inline ChildResult run_in_child(const std::function<std::string()>& body,
                                std::chrono::seconds limit = std::chrono::seconds(10)) {
    ChildResult result;
    int fds[2] = {-1, -1};
    if (::pipe(fds) != 0) {
        result.how = std::string("pipe failed: ") + std::strerror(errno);
        return result;
    }
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = ::fork();
    if (pid < 0) {
        result.how = std::string("fork failed: ") + std::strerror(errno);
        ::close(fds[0]);
        ::close(fds[1]);
        return result;
    }
    if (pid == 0) {
        ::close(fds[0]);
        ::alarm(static_cast<unsigned>(limit.count()) + 5);
        std::string text;
        try {
            text = body();
        } catch (const std::exception& e) {
            text = std::string("exception: ") + e.what();
        } catch (...) {
            text = "exception of an unknown type";
        }
        for (std::size_t done = 0; done < text.size();) {
            const ssize_t n = ::write(fds[1], text.data() + done, text.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            done += static_cast<std::size_t>(n);
        }
        ::_exit(0);
    }
    ::close(fds[1]);
    detail::wait_for_child(pid, fds[0], start, limit, result);
    return result;
}

/// Runs this test program again in a new process that starts with `changes` applied to its
/// environment (a value sets the variable, nullopt removes it), running only the tests `filter`
/// names (disabled ones included, so the test run this way can be a DISABLED_ one the normal run
/// passes over). For what a process reads when it starts, as the loader reads LD_LIBRARY_PATH.
/// `output` is the program's standard output and error; killed after `limit`.
inline ChildResult run_test_in_new_process(
    const std::string& filter, const std::vector<std::pair<std::string, std::optional<std::string>>>& changes,
    std::chrono::seconds limit = std::chrono::seconds(10)) {
    // Everything the child needs is built before fork: between fork and exec only exec-safe calls.
    std::vector<std::string> environment;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string entry(*e);
        const std::string key = entry.substr(0, entry.find('='));
        bool changed = false;
        for (const auto& change : changes) changed = changed || change.first == key;
        if (!changed) environment.push_back(entry);
    }
    for (const auto& [key, value] : changes)
        if (value) environment.push_back(key + "=" + *value);
    std::vector<char*> envp;
    for (std::string& entry : environment) envp.push_back(entry.data());
    envp.push_back(nullptr);
    std::string program = "/proc/self/exe", filter_flag = "--gtest_filter=" + filter,
                disabled_flag = "--gtest_also_run_disabled_tests";
    std::vector<char*> argv{program.data(), filter_flag.data(), disabled_flag.data(), nullptr};

    ChildResult result;
    int fds[2] = {-1, -1};
    if (::pipe(fds) != 0) {
        result.how = std::string("pipe failed: ") + std::strerror(errno);
        return result;
    }
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = ::fork();
    if (pid < 0) {
        result.how = std::string("fork failed: ") + std::strerror(errno);
        ::close(fds[0]);
        ::close(fds[1]);
        return result;
    }
    if (pid == 0) {
        ::close(fds[0]);
        ::dup2(fds[1], STDOUT_FILENO);
        ::dup2(fds[1], STDERR_FILENO);
        ::close(fds[1]);
        ::execve(program.c_str(), argv.data(), envp.data());
        ::_exit(127);
    }
    ::close(fds[1]);
    detail::wait_for_child(pid, fds[0], start, limit, result);
    return result;
}

}  // namespace gpumath::test
