// rerace/base/wrap.h: lines that fit a width. The command line's text reports are kept under
// kReportWidth columns and its --help under the terminal's width (80 when not a terminal):
// a longer line goes on at its last space that fits, on a line indented further. Pure functions
// of their input (the same bytes for the same text), callable from any thread.
//
//   std::string text = WrapReport(report);          // prose wrapped, commands kept whole
//   std::string help = WrapHelp(app.help(), 80);    // option descriptions in their column
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rerace {

inline constexpr size_t kReportWidth = 160;

namespace wrap_detail {

// Calls `each(i)` with the byte offset of every column of `s` as a terminal shows it: UTF-8
// continuation bytes and ANSI colour sequences (ESC [ ... m) take none. Stops when it returns
// true; returns that offset, else s.size().
template <typename Each>
size_t EachColumn(std::string_view s, Each&& each) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0x1b && i + 1 < s.size() && s[i + 1] == '[') {
      while (i < s.size() && s[i] != 'm') ++i;
      continue;
    }
    if ((c & 0xC0) != 0x80 && each(i)) return i;
  }
  return s.size();
}

inline size_t Columns(std::string_view s) {
  size_t n = 0;
  EachColumn(s, [&n](size_t) {
    ++n;
    return false;
  });
  return n;
}

// The byte offset in `s` where `columns` columns end (s.size() when it is shorter).
inline size_t ByteAt(std::string_view s, size_t columns) {
  size_t n = 0;
  return EachColumn(s, [&](size_t) { return n++ == columns; });
}

// One line wrapped at spaces to `width` columns, each further line starting with `indent`
// spaces. A word longer than the room stays whole on a line of its own.
inline std::string WrapLine(std::string_view line, size_t width, size_t indent,
                            bool at_commas = false) {
  std::string out;
  std::string rest(line);
  const std::string pad(indent, ' ');
  size_t floor = rest.find_first_not_of(' ');  // no cut inside the line's own indent
  while (Columns(rest) > width) {
    const size_t limit = ByteAt(rest, width);
    size_t cut = rest.rfind(' ', limit);
    if (at_commas && (cut == std::string::npos || cut <= floor)) {
      // A long list ("{auto,triton,...}") breaks after a comma, the comma kept.
      const size_t comma = rest.rfind(',', limit - 1);
      if (comma != std::string::npos && comma > floor) {
        out.append(rest, 0, comma + 1);
        out += '\n';
        rest = pad + rest.substr(comma + 1);
        floor = indent;
        continue;
      }
    }
    if (cut == std::string::npos || cut <= floor) {
      cut = rest.find(' ', limit);  // one long word: it goes whole
      if (cut == std::string::npos) break;
    }
    size_t end = cut;
    while (end > 0 && rest[end - 1] == ' ') --end;
    size_t next = cut;
    while (next < rest.size() && rest[next] == ' ') ++next;
    if (next == rest.size()) break;
    out.append(rest, 0, end);
    out += '\n';
    rest = pad + rest.substr(next);
    floor = indent;
  }
  return out + rest;
}

inline size_t LeadingSpaces(std::string_view s) {
  const size_t n = s.find_first_not_of(' ');
  return n == std::string_view::npos ? s.size() : n;
}

// Where a command line to copy starts in `line` (`rerace replay ...`, `/path/to/rerace check
// ...`), or npos: such a command is never broken.
inline size_t CommandAt(std::string_view line) {
  static constexpr std::string_view kCommands[] = {"replay ", "check ", "fuzz ", "show ", "record ",
                                                   "merge ", "export ", "classic ", "synth "};
  for (size_t at = line.find("rerace "); at != std::string_view::npos;
       at = line.find("rerace ", at + 1)) {
    const std::string_view after = line.substr(at + 7);
    bool command = false;
    for (std::string_view c : kCommands) command = command || after.substr(0, c.size()) == c;
    if (!command) continue;
    size_t start = at;  // back to the start of the word: a path to the binary
    while (start > 0 && line[start - 1] != ' ') --start;
    // Only at the start of a line or after a colon: "replay it: rerace replay ...".
    std::string_view before = line.substr(0, start);
    while (!before.empty() && before.back() == ' ') before.remove_suffix(1);
    if (before.empty() || before.back() == ':') return start;
  }
  return std::string_view::npos;
}

template <typename EachLine>
std::string ForEachLine(std::string_view text, EachLine&& each) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    const bool last = nl == std::string_view::npos;
    if (last) nl = text.size();
    out += each(text.substr(pos, nl - pos));
    if (!last) out += '\n';
    pos = nl + 1;
  }
  return out;
}

}  // namespace wrap_detail

// A text report with every line of prose at most `width` columns: a longer line goes on at its
// last space that fits, indented 4 more than its own. A command line to copy (`...: rerace
// replay T --schedule rs1:...`) is never broken: the prose before it is wrapped and the command
// goes whole on a line of its own. A JSON line (it starts with '{') is left as it is.
inline std::string WrapReport(std::string_view text, size_t width = kReportWidth) {
  using namespace wrap_detail;
  return ForEachLine(text, [width](std::string_view line) -> std::string {
    if (Columns(line) <= width || (!line.empty() && line.front() == '{')) return std::string(line);
    const size_t lead = LeadingSpaces(line);
    const size_t indent = lead + 4;
    const size_t cmd = CommandAt(line);
    if (cmd == std::string_view::npos) return WrapLine(line, width, indent);
    if (cmd <= lead) return std::string(line);
    std::string_view prose = line.substr(0, cmd);
    while (!prose.empty() && prose.back() == ' ') prose.remove_suffix(1);
    return WrapLine(prose, width, indent) + "\n" + std::string(indent, ' ') +
           std::string(line.substr(cmd));
  });
}

// --help text at most `width` columns: an option's description goes on in its own column (where
// it started, after two spaces or more), other lines indented 2 more than their own; a list too
// long for a line breaks after a comma.
inline std::string WrapHelp(std::string_view text, size_t width) {
  using namespace wrap_detail;
  return ForEachLine(text, [width](std::string_view line) -> std::string {
    if (Columns(line) <= width) return std::string(line);
    const size_t lead = LeadingSpaces(line);
    size_t indent = lead + 2;
    if (lead > 0) {  // "  --fix TEXT    description": the description's column
      const size_t gap = line.find("  ", lead);
      if (gap != std::string_view::npos) {
        const size_t desc = line.find_first_not_of(' ', gap);
        if (desc != std::string_view::npos && Columns(line.substr(0, desc)) < width / 2)
          indent = Columns(line.substr(0, desc));
      }
    }
    return WrapLine(line, width, indent, /*at_commas=*/true);
  });
}

}  // namespace rerace
