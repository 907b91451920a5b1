// POSIX shell quoting: every remote command is built from an argv through these two functions.
//
// Never concatenate user text (a run name, a path) into a shell line: build the argv and call
// command_line(). The result is safe for any POSIX sh (dash, bash, busybox) on the node.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace td::remote {

/// One argument quoted for a POSIX shell: wrapped in single quotes, each ' written as '\''.
/// Bytes are passed through unchanged (UTF-8, newlines, '*', '$', '`', ';'); a NUL cannot reach
/// a shell and raises td::Error. Words made only of [A-Za-z0-9_./:@%+,-] are left bare (the
/// shell reads them unchanged); the empty string becomes ''. A leading '-' is the program's
/// business, not the shell's: put "--" before paths in the argv.
/// Example: shell_quote("it's") == "'it'\\''s'".
std::string shell_quote(std::string_view arg);

/// argv joined with spaces, each element through shell_quote(). argv must not be empty
/// (td::Error). Example: command_line({"ls", "-l", "a b"}) == "ls -l 'a b'".
std::string command_line(const std::vector<std::string>& argv);

}  // namespace td::remote
