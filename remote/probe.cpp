// probe_node(): one fixed POSIX sh script on the node; $1 = work dir, $2 = extra PATH entry.
#include "remote/probe.h"

#include <charconv>
#include <cstdio>
#include <sstream>

#include "engine/common/error.h"

namespace td::remote {

namespace {

// Output: "key=value" lines, each value on one line; nvidia-smi's output one "smi=" line per line
// of it; then a "td_probe_path" marker line followed by the measured path's raw bytes up to the
// end (a path may hold newlines, so it comes last and unprefixed).
constexpr const char* kScript = R"SH(wd=$1
[ -n "$2" ] && PATH="$2:$PATH"
export PATH
echo td_probe=1
echo "os=$(sed -n 's/^PRETTY_NAME=//p' /etc/os-release 2>/dev/null | head -n 1)"
echo "kernel=$(uname -r 2>/dev/null)"
echo "arch=$(uname -m 2>/dev/null)"
echo "cpu_count=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null)"
m=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n 1)
[ -n "$m" ] || m=$(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1)
echo "cpu_model=$m"
echo "mem_total_kb=$(sed -n 's/^MemTotal:[[:space:]]*\([0-9]*\).*/\1/p' /proc/meminfo 2>/dev/null)"
echo "mem_available_kb=$(sed -n 's/^MemAvailable:[[:space:]]*\([0-9]*\).*/\1/p' /proc/meminfo 2>/dev/null)"
echo "glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null)"
[ -n "$wd" ] || wd=.
d=$wd
while [ ! -e "$d" ]; do
  p=$(dirname -- "$d")
  [ "$p" = "$d" ] && break
  d=$p
done
[ "$d" = "$wd" ] && echo work_dir_exists=1
echo "disk_free_kb=$(df -Pk -- "$d" 2>/dev/null | awk 'NR==2 {print $4}')"
if command -v nvidia-smi >/dev/null 2>&1; then
  echo smi_found=1
  t=
  command -v timeout >/dev/null 2>&1 && t="timeout 15"
  o=$($t nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader,nounits 2>&1)
  echo "smi_rc=$?"
  printf '%s\n' "$o" | sed 's/^/smi=/'
fi
echo td_probe_path
printf '%s' "$d"
)SH";

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  s.erase(0, s.find_first_not_of(ws) == std::string::npos ? s.size() : s.find_first_not_of(ws));
  s.erase(s.find_last_not_of(ws) + 1);
  return s;
}

template <typename T>
std::optional<T> to_number(const std::string& text) {
  const std::string t = trim(text);
  T v{};
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size()) return std::nullopt;
  return v;
}

std::optional<uint64_t> kb_to_bytes(const std::string& text) {
  auto kb = to_number<uint64_t>(text);
  if (!kb) return std::nullopt;
  return *kb * 1024u;
}

// PRETTY_NAME="Debian GNU/Linux 12 (bookworm)" → without the quotes (os-release allows ' or ").
std::string unquote(std::string s) {
  s = trim(std::move(s));
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
    s = s.substr(1, s.size() - 2);
  return s;
}

// "0, NVIDIA H100 80GB HBM3, 81559, 550.54.15": index first, memory and driver last, the name
// in between (rejoined, in case it holds a comma).
std::optional<GpuInfo> parse_gpu(const std::string& line) {
  std::vector<std::string> f;
  std::string cur;
  std::istringstream in(line);
  while (std::getline(in, cur, ',')) f.push_back(trim(cur));
  if (f.size() < 4) return std::nullopt;
  auto index = to_number<int>(f.front());
  if (!index) return std::nullopt;
  GpuInfo g;
  g.index = *index;
  for (size_t i = 1; i + 2 < f.size(); ++i) g.name += (i > 1 ? ", " : "") + f[i];
  if (auto mib = to_number<uint64_t>(f[f.size() - 2])) g.memory_bytes = *mib * 1048576u;
  g.driver_version = f.back();
  return g;
}

std::string gib(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::string or_unknown(const std::string& s) { return s.empty() ? "unknown" : s; }

}  // namespace

NodeReport parse_probe_output(const std::string& out) {
  NodeReport r;
  const std::string marker = "\ntd_probe_path\n";
  const size_t mpos = out.find(marker);
  const std::string head = out.substr(0, mpos);
  if (mpos != std::string::npos) r.disk_path = out.substr(mpos + marker.size());
  bool started = false;
  std::optional<int> smi_rc;
  std::vector<std::string> smi_lines;
  std::istringstream in(head);
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq);
    const std::string value = line.substr(eq + 1);
    if (key == "td_probe") started = true;
    else if (key == "os") r.os = unquote(value);
    else if (key == "kernel") r.kernel = trim(value);
    else if (key == "arch") r.arch = trim(value);
    else if (key == "cpu_count") r.cpu_count = to_number<int>(value);
    else if (key == "cpu_model") r.cpu_model = trim(value);
    else if (key == "mem_total_kb") r.mem_total_bytes = kb_to_bytes(value);
    else if (key == "mem_available_kb") r.mem_available_bytes = kb_to_bytes(value);
    else if (key == "glibc") {
      std::string v = trim(value);  // "glibc 2.36"
      r.glibc_version = v.rfind("glibc ", 0) == 0 ? v.substr(6) : v;
    } else if (key == "work_dir_exists") r.work_dir_exists = true;
    else if (key == "disk_free_kb") r.disk_free_bytes = kb_to_bytes(value);
    else if (key == "smi_found") r.nvidia_smi_found = true;
    else if (key == "smi_rc") smi_rc = to_number<int>(value);
    else if (key == "smi") smi_lines.push_back(value);
  }
  if (!started) throw Error("the node did not run the probe script (no td_probe line in its output)");
  if (r.nvidia_smi_found) {
    while (!smi_lines.empty() && trim(smi_lines.back()).empty()) smi_lines.pop_back();
    if (smi_rc && *smi_rc == 0) {
      for (const std::string& l : smi_lines) {
        if (trim(l).empty()) continue;
        if (auto g = parse_gpu(l)) r.gpus.push_back(*g);
        else r.nvidia_smi_error += (r.nvidia_smi_error.empty() ? "" : "\n") + ("unexpected line: " + l);
      }
    } else {
      std::string text;
      for (const std::string& l : smi_lines) text += (text.empty() ? "" : "\n") + l;
      if (text.empty()) text = "(no output)";
      const std::string code = !smi_rc ? "?" : *smi_rc == 124 ? "124: timed out after 15 s" : std::to_string(*smi_rc);
      r.nvidia_smi_error = "nvidia-smi failed (exit " + code + "): " + text;
    }
  }
  return r;
}

NodeReport probe_node(Session& session, const std::string& work_dir, const ProbeOptions& opts) {
  ExecOptions eo;
  eo.timeout_ms = opts.timeout_ms;
  eo.max_output = 1u << 20;
  const ExecResult res = session.exec({"sh", "-c", kScript, "sh", work_dir, opts.extra_path}, eo);
  NodeReport r;
  try {
    r = parse_probe_output(res.out);
  } catch (const Error&) {
    throw Error(session.where() + ": the connection test could not run `sh` on the node (exit " +
                std::to_string(res.exit_status) + "): " + trim(res.err.substr(0, 2000)) +
                ". Check that the user's login shell works.");
  }
  r.where = session.where();
  r.work_dir = work_dir;
  return r;
}

std::string format_report(const NodeReport& r) {
  std::string s;
  if (!r.where.empty()) s += "Node: " + r.where + "\n";
  s += "OS: " + or_unknown(r.os) + " (kernel " + or_unknown(r.kernel) + ", " + or_unknown(r.arch) + ")\n";
  s += "CPU: " + (r.cpu_count ? std::to_string(*r.cpu_count) : std::string("unknown number")) + " × " +
       or_unknown(r.cpu_model) + "\n";
  s += "Memory: " + (r.mem_total_bytes ? gib(*r.mem_total_bytes) : std::string("unknown")) + " total, " +
       (r.mem_available_bytes ? gib(*r.mem_available_bytes) : std::string("unknown")) + " available\n";
  s += "Disk: " + (r.disk_free_bytes ? gib(*r.disk_free_bytes) : std::string("unknown")) + " free in " +
       or_unknown(r.disk_path);
  if (!r.work_dir_exists) s += " (the work directory " + r.work_dir + " does not exist yet)";
  s += "\n";
  s += "glibc: " + (r.glibc_version.empty() ? std::string("unknown (not glibc?)") : r.glibc_version) + "\n";
  if (!r.nvidia_smi_found) {
    s += "GPUs: none (nvidia-smi not found)\n";
  } else if (!r.nvidia_smi_error.empty() && r.gpus.empty()) {
    s += "GPUs: none (" + r.nvidia_smi_error + ")\n";
  } else {
    if (r.gpus.empty()) s += "GPUs: none listed by nvidia-smi\n";
    for (const GpuInfo& g : r.gpus)
      s += "GPU " + std::to_string(g.index) + ": " + or_unknown(g.name) + ", " +
           (g.memory_bytes ? gib(*g.memory_bytes) : std::string("unknown memory")) + ", driver " +
           or_unknown(g.driver_version) + "\n";
    if (!r.nvidia_smi_error.empty()) s += "nvidia-smi: " + r.nvidia_smi_error + "\n";
  }
  return s;
}

}  // namespace td::remote
