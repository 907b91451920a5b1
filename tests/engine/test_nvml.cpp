// GPU telemetry through NVML (engine/metrics/nvml.h) against the tests' fake libnvidia-ml
// (tests/engine/fake_nvml.cpp, values from FAKE_NVML_* variables): the values and their unit
// conversions checked by hand, an absent library, a library without some symbols, failing calls,
// which device a rank's CUDA ordinal is under CUDA_VISIBLE_DEVICES, and a real 2-rank training
// run whose step events and store carry each rank's fake values.
#include <dlfcn.h>

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <map>
#include <set>

#include "engine/metrics/nvml.h"
#include "store/ingest.h"
#include "store/store.h"
#include "test_util.h"

using td::nvml::GpuSample;
using td::nvml::Nvml;

namespace {

const char* const kVars[] = {"FAKE_NVML_INIT",     "FAKE_NVML_COUNT",    "FAKE_NVML_UTIL",     "FAKE_NVML_MEM_USED",
                             "FAKE_NVML_MEM_TOTAL", "FAKE_NVML_POWER_MW", "FAKE_NVML_TEMP",     "FAKE_NVML_SM_CLOCK",
                             "FAKE_NVML_THROTTLE", "FAKE_NVML_NAME",     "FAKE_NVML_UUID",     "FAKE_NVML_BUS_ID",
                             "FAKE_NVML_FAIL",     "FAKE_NVML_FAIL_CODE", "FAKE_NVML_LOG",     "FAKE_NVML_BY_RANK",
                             "TRAINDECK_NVML_LIBRARY", "TRAINDECK_NVML_DEVICE"};

// The stored value of `metric` of `rank` at `step`, NaN when there is no row.
double stored(td::store::Store& st, const std::string& run, const char* metric, int rank, int64_t step) {
  const auto s = st.metric_series(run, metric, rank, step, step);
  return s.size() == 1 ? s.value[0] : std::nan("");
}

const char* const kGpuKeys[] = {"gpu_util_pct", "gpu_mem_used_bytes", "gpu_power_w", "gpu_temp_c", "gpu_sm_clock_mhz", "gpu_throttle"};

// Two GPUs with values a person can check: GPU 0 busy and held by its power cap and heat, GPU 1 idle.
void two_gpus() {
  qputenv("FAKE_NVML_COUNT", "2");
  qputenv("FAKE_NVML_UTIL", "37,0");
  qputenv("FAKE_NVML_MEM_USED", "1073741824,0");          // 1 GiB, nothing
  qputenv("FAKE_NVML_MEM_TOTAL", "85899345920,85899345920");  // 80 GiB each
  qputenv("FAKE_NVML_POWER_MW", "312456,70000");          // 312.456 W, 70 W
  qputenv("FAKE_NVML_TEMP", "61,33");
  qputenv("FAKE_NVML_SM_CLOCK", "1980,345");
  qputenv("FAKE_NVML_THROTTLE", "0x44,0");                // sw_power_cap | hw_thermal_slowdown; none
  qputenv("FAKE_NVML_NAME", "NVIDIA H100 80GB HBM3,NVIDIA H100 80GB HBM3");
  qputenv("FAKE_NVML_UUID", "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6,GPU-1d2e3f40-0000-1111-2222-333344445555");
  qputenv("FAKE_NVML_BUS_ID", "00000000:3B:00.0,00000000:86:00.0");
}

}  // namespace

class TestNvml : public QObject {
  Q_OBJECT

 private slots:
  void init() {
    for (const char* v : kVars) qunsetenv(v);
  }

  void values_and_units_from_the_library() {
    two_gpus();
    Nvml nvml(TD_FAKE_NVML);
    QVERIFY2(nvml.available(), nvml.error().c_str());
    QVERIFY(nvml.error().empty());
    QCOMPARE(nvml.device_count(), 2u);

    const auto s0 = nvml.sample(0);
    QVERIFY(s0);
    QCOMPARE(s0->index, 0u);
    QCOMPARE(s0->name, std::string("NVIDIA H100 80GB HBM3"));
    QCOMPARE(s0->uuid, std::string("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"));
    QCOMPARE(s0->pci_bus_id, std::string("00000000:3B:00.0"));
    QCOMPARE(*s0->util_pct, 37.0);
    QCOMPARE(*s0->mem_used_bytes, uint64_t(1) << 30);
    QCOMPARE(*s0->mem_total_bytes, uint64_t(80) << 30);
    QCOMPARE(*s0->power_w, 312.456);  // 312456 mW
    QCOMPARE(*s0->temp_c, 61.0);
    QCOMPARE(*s0->sm_clock_mhz, 1980.0);
    QCOMPARE(*s0->throttle_reasons, uint64_t(0x44));

    const auto s1 = nvml.sample(1);
    QVERIFY(s1);
    QCOMPARE(*s1->util_pct, 0.0);
    QCOMPARE(*s1->mem_used_bytes, uint64_t(0));
    QCOMPARE(*s1->power_w, 70.0);
    QCOMPARE(*s1->throttle_reasons, uint64_t(0));
    QVERIFY(!nvml.sample(2));  // past the count

    const auto all = nvml.sample_all();
    QCOMPARE(all.size(), size_t(2));
    QCOMPARE(all[1].index, 1u);

    const nlohmann::json j = td::nvml::sample_json(*s0);
    QCOMPARE(j.at("util_pct").get<double>(), 37.0);
    QCOMPARE(j.at("mem_used_bytes").get<uint64_t>(), uint64_t(1073741824));
    QCOMPARE(j.at("power_w").get<double>(), 312.456);
    QCOMPARE(j.at("temp_c").get<double>(), 61.0);
    QCOMPARE(j.at("sm_clock_mhz").get<double>(), 1980.0);
    QCOMPARE(j.at("throttle_reasons").get<uint64_t>(), uint64_t(0x44));
    QCOMPARE(j.at("throttle").get<std::string>(), std::string("sw_power_cap,hw_thermal_slowdown"));
    QCOMPARE(td::nvml::sample_json(*s1).at("throttle").get<std::string>(), std::string("none"));

    // Values are read at each sample, not once.
    qputenv("FAKE_NVML_UTIL", "99,0");
    QCOMPARE(*nvml.sample(0)->util_pct, 99.0);
  }

  void throttle_reason_names_follow_nvml_h() {
    QCOMPARE(td::nvml::throttle_reason_names(0), std::string("none"));
    QCOMPARE(td::nvml::throttle_reason_names(0x1), std::string("gpu_idle"));
    QCOMPARE(td::nvml::throttle_reason_names(0x7ff),
             std::string("gpu_idle,applications_clocks_setting,sw_power_cap,hw_slowdown,sync_boost,sw_thermal_slowdown,"
                         "hw_thermal_slowdown,hw_power_brake_slowdown,display_clock_setting,board_limit,reliability"));
    QCOMPARE(td::nvml::throttle_reason_names((uint64_t(1) << 20) | 0x8), std::string("hw_slowdown,bit_20"));
    QCOMPARE(td::nvml::throttle_reason_names(uint64_t(1) << 63), std::string("bit_63"));
  }

  void the_environment_names_the_library() {
    two_gpus();
    qputenv("TRAINDECK_NVML_LIBRARY", TD_FAKE_NVML);
    Nvml nvml;
    QVERIFY2(nvml.available(), nvml.error().c_str());
    QCOMPARE(nvml.library(), std::string(TD_FAKE_NVML));
    QCOMPARE(*nvml.sample(0)->temp_c, 61.0);
    // An argument wins over the variable.
    Nvml other("/nonexistent/libnvidia-ml.so.1");
    QVERIFY(!other.available());
  }

  void an_absent_library_gives_no_sample() {
    Nvml missing("/nonexistent/libnvidia-ml.so.1");
    QVERIFY(!missing.available());
    QVERIFY2(missing.error().find("/nonexistent/libnvidia-ml.so.1 cannot be loaded") != std::string::npos, missing.error().c_str());
    QCOMPARE(missing.device_count(), 0u);
    QVERIFY(!missing.sample(0));
    QVERIFY(missing.sample_all().empty());
    QVERIFY(!td::nvml::device_for_cuda_ordinal(missing, 0, nullptr));

    qputenv("TRAINDECK_NVML_LIBRARY", "/nonexistent/fake.so");
    Nvml from_env;
    QVERIFY(!from_env.available());
    QVERIFY2(from_env.error().find("TRAINDECK_NVML_LIBRARY=/nonexistent/fake.so cannot be loaded") != std::string::npos,
             from_env.error().c_str());
    qunsetenv("TRAINDECK_NVML_LIBRARY");

    // The default name: on a machine without NVIDIA's driver, the message says so.
    if (void* h = ::dlopen(td::nvml::kDefaultLibrary, RTLD_NOW | RTLD_LOCAL)) {
      ::dlclose(h);
      qInfo("libnvidia-ml.so.1 is installed here: the no-driver message is not checked");
    } else {
      Nvml none;
      QVERIFY(!none.available());
      QVERIFY2(none.error().rfind("no NVIDIA driver (libnvidia-ml.so.1 not found)", 0) == 0, none.error().c_str());
    }
  }

  void a_failing_init_gives_no_sample() {
    two_gpus();
    qputenv("FAKE_NVML_INIT", "9");
    Nvml nvml(TD_FAKE_NVML);
    QVERIFY(!nvml.available());
    QCOMPARE(nvml.error(), std::string("nvmlInit_v2 failed: Driver Not Loaded (9)"));
    QVERIFY(!nvml.sample(0));
  }

  void a_library_without_nvmlinit_is_not_nvml() {
    two_gpus();
    Nvml nvml(TD_FAKE_NVML_NO_INIT);
    QVERIFY(!nvml.available());
    QVERIFY2(nvml.error().find("has no nvmlInit_v2") != std::string::npos, nvml.error().c_str());
    QVERIFY(!nvml.sample(0));
  }

  void missing_symbols_leave_their_fields_out() {
    two_gpus();
    Nvml nvml(TD_FAKE_NVML_PARTIAL);  // no nvmlDeviceGetPowerUsage, no throttle-reason function
    QVERIFY2(nvml.available(), nvml.error().c_str());
    const auto s = nvml.sample(0);
    QVERIFY(s);
    QVERIFY(!s->power_w);
    QVERIFY(!s->throttle_reasons);
    QCOMPARE(*s->util_pct, 37.0);
    QCOMPARE(*s->temp_c, 61.0);
    QCOMPARE(*s->sm_clock_mhz, 1980.0);
    const nlohmann::json j = td::nvml::sample_json(*s);
    QVERIFY(!j.contains("power_w"));
    QVERIFY(!j.contains("throttle"));
    QVERIFY(!j.contains("throttle_reasons"));
  }

  void failing_calls_leave_their_fields_out() {
    two_gpus();
    qputenv("FAKE_NVML_FAIL", "nvmlDeviceGetPowerUsage,nvmlDeviceGetTemperature,nvmlDeviceGetName");
    qputenv("FAKE_NVML_FAIL_CODE", "15");  // NVML_ERROR_GPU_IS_LOST
    Nvml nvml(TD_FAKE_NVML);
    QVERIFY(nvml.available());
    auto s = nvml.sample(0);
    QVERIFY(s);
    QVERIFY(!s->power_w);
    QVERIFY(!s->temp_c);
    QVERIFY(s->name.empty());
    QCOMPARE(*s->sm_clock_mhz, 1980.0);
    QVERIFY(!td::nvml::sample_json(*s).contains("name"));

    // Every query failing: a sample with its index and nothing else, still no failure.
    qputenv("FAKE_NVML_FAIL",
            "nvmlDeviceGetUtilizationRates,nvmlDeviceGetMemoryInfo,nvmlDeviceGetPowerUsage,nvmlDeviceGetTemperature,"
            "nvmlDeviceGetClockInfo,nvmlDeviceGetCurrentClocksThrottleReasons,nvmlDeviceGetName,nvmlDeviceGetUUID,"
            "nvmlDeviceGetPciInfo_v3");
    s = nvml.sample(1);
    QVERIFY(s);
    QCOMPARE(td::nvml::sample_json(*s).dump(), std::string("{\"index\":1}"));

    // A GPU the library has no value for answers NOT_SUPPORTED: that field is missing.
    qunsetenv("FAKE_NVML_FAIL");
    qputenv("FAKE_NVML_POWER_MW", "312456");  // none for GPU 1
    QVERIFY(!nvml.sample(1)->power_w);
    QCOMPARE(*nvml.sample(0)->power_w, 312.456);
  }

  void readings_out_of_range_and_odd_text_are_not_trusted() {
    two_gpus();
    qputenv("FAKE_NVML_UTIL", "150,100");                  // 150 % cannot be
    qputenv("FAKE_NVML_MEM_USED", "2000,10");              // more used than there is on GPU 0
    qputenv("FAKE_NVML_MEM_TOTAL", "1000,10");
    qputenv("FAKE_NVML_NAME", "H100 \xc3\xa9\x01x,GPU");  // bytes that are not printable ASCII
    Nvml nvml(TD_FAKE_NVML);
    const auto s0 = nvml.sample(0);
    QVERIFY(!s0->util_pct);
    QVERIFY(!s0->mem_used_bytes);
    QVERIFY(!s0->mem_total_bytes);
    QCOMPARE(s0->name, std::string("H100 ???x"));
    QVERIFY(!td::nvml::sample_json(*s0).dump().empty());  // valid JSON whatever the driver said
    const auto s1 = nvml.sample(1);
    QCOMPARE(*s1->util_pct, 100.0);
    QCOMPARE(*s1->mem_used_bytes, uint64_t(10));
  }

  void the_rank_s_device_under_cuda_visible_devices() {
    qputenv("FAKE_NVML_COUNT", "4");
    qputenv("FAKE_NVML_UUID",
            "GPU-aaaa1111-0000-0000-0000-000000000000,GPU-aaaa2222-0000-0000-0000-000000000000,"
            "GPU-bbbb0000-0000-0000-0000-000000000000,GPU-cccc0000-0000-0000-0000-000000000000");
    Nvml nvml(TD_FAKE_NVML);
    QVERIFY(nvml.available());
    using td::nvml::device_for_cuda_ordinal;
    auto dev = [&](int ordinal, const char* visible) { return device_for_cuda_ordinal(nvml, ordinal, visible); };
    // Unset: the ordinal itself, within NVML's count.
    QCOMPARE(dev(0, nullptr), std::optional<unsigned>(0));
    QCOMPARE(dev(3, nullptr), std::optional<unsigned>(3));
    QVERIFY(!dev(4, nullptr));
    QVERIFY(!dev(-1, nullptr));
    // Indices: entry N of the list.
    QCOMPARE(dev(0, "2,0"), std::optional<unsigned>(2));
    QCOMPARE(dev(1, "2,0"), std::optional<unsigned>(0));
    QVERIFY(!dev(2, "2,0"));
    QCOMPARE(dev(1, " 3 , 1 "), std::optional<unsigned>(1));
    // The list ends at the first entry that names no device, as in CUDA.
    QCOMPARE(dev(0, "1,-1,0"), std::optional<unsigned>(1));
    QVERIFY(!dev(2, "1,-1,0"));
    QVERIFY(!dev(1, "1,7,0"));  // 7: NVML has 4
    QVERIFY(!dev(0, ""));
    QVERIFY(!dev(0, "-1"));
    QVERIFY(!dev(0, "MIG-4b2b4a4e-1234-5678-9abc-def012345678"));
    QVERIFY(!dev(0, "nvidia0"));
    // UUIDs, whole or a unique prefix; an ambiguous prefix names none.
    QCOMPARE(dev(0, "GPU-cccc0000-0000-0000-0000-000000000000"), std::optional<unsigned>(3));
    QCOMPARE(dev(1, "0,GPU-bbbb"), std::optional<unsigned>(2));
    QVERIFY(!dev(0, "GPU-aaaa"));
    QCOMPARE(dev(0, "GPU-aaaa2"), std::optional<unsigned>(1));
    QVERIFY(!dev(0, "GPU-dddd"));
  }

  void telemetry_device_of_a_run() {
    two_gpus();
    Nvml nvml(TD_FAKE_NVML);
    using td::nvml::telemetry_device;
    QVERIFY(!telemetry_device(nvml, "cpu", nullptr, nullptr));  // a CPU run reports no GPU
    QCOMPARE(telemetry_device(nvml, "cpu", "1", nullptr), std::optional<unsigned>(1));
    QCOMPARE(telemetry_device(nvml, "cuda", nullptr, nullptr), std::optional<unsigned>(0));
    QCOMPARE(telemetry_device(nvml, "cuda:1", nullptr, nullptr), std::optional<unsigned>(1));
    QCOMPARE(telemetry_device(nvml, "cuda:0", nullptr, "1"), std::optional<unsigned>(1));
    QCOMPARE(telemetry_device(nvml, "cuda:0", "", "1"), std::optional<unsigned>(1));   // empty: unset
    QCOMPARE(telemetry_device(nvml, "cuda:1", "0", "1,0"), std::optional<unsigned>(0));  // the variable wins
    QCOMPARE(telemetry_device(nvml, "cuda", "GPU-1d2e", nullptr), std::optional<unsigned>(1));
    // The CUDA device's PCI address wins over its ordinal (CUDA may number GPUs otherwise than
    // NVML); an address NVML does not list falls back to the ordinal rule; a CPU run has none.
    QCOMPARE(telemetry_device(nvml, "cuda:0", nullptr, nullptr, "0000:86:00.0"), std::optional<unsigned>(1));
    QCOMPARE(telemetry_device(nvml, "cuda", nullptr, "1", "0000:3b:00.0"), std::optional<unsigned>(0));
    QCOMPARE(telemetry_device(nvml, "cuda:1", nullptr, nullptr, "0000:3c:00.0"), std::optional<unsigned>(1));
    QCOMPARE(telemetry_device(nvml, "cuda:0", "1", nullptr, "0000:3b:00.0"), std::optional<unsigned>(1));  // the variable wins
    QVERIFY(!telemetry_device(nvml, "cpu", nullptr, nullptr, "0000:3b:00.0"));
    QVERIFY(!telemetry_device(nvml, "cuda:2", nullptr, nullptr));
    QVERIFY(!telemetry_device(nvml, "cuda:x", nullptr, nullptr));
    QVERIFY(!telemetry_device(nvml, "cpu", "2", nullptr));
    QVERIFY(!telemetry_device(nvml, "cpu", "GPU-none", nullptr));
    Nvml missing("/nonexistent/libnvidia-ml.so.1");
    QVERIFY(!telemetry_device(missing, "cuda", "0", nullptr));
  }

  // A real data-parallel CPU run (2 ranks) with the fake NVML, each rank reading its own values
  // (FAKE_NVML_BY_RANK): the step events carry them, with the units of the table, and the store
  // has them under the table's metric names per rank. At most one reading per step and rank,
  // and none of the identity queries (name, UUID, PCI) at each step.
  void a_training_run_reports_each_rank_s_gpu() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const tdtest::TinyRun t = tdtest::write_tiny_run(dir.path(), tdtest::generated_text(2000));
    QVERIFY2(t.prepare.exit_code == 0, qPrintable(t.prepare.err));
    two_gpus();
    const QString log = dir.filePath("nvml.log"), out = dir.filePath("run");
    qputenv("FAKE_NVML_BY_RANK", "1");
    qputenv("FAKE_NVML_LOG", log.toUtf8());
    qputenv("TRAINDECK_NVML_LIBRARY", TD_FAKE_NVML);
    qputenv("TRAINDECK_NVML_DEVICE", "0");
    const int steps = 6;
    const tdtest::ProcResult r =
        tdtest::engine({"launch", "--quiet", "--nproc", "2", "--", "train", "--config", t.cfg, "--out", out, "--quiet", "--no-events-stdout",
                        "--run-id", "gpu-run", "--set", QString("train.steps=%1").arg(steps), "--set", "train.checkpoint_interval=0",
                        "--set", "train.micro_batch=2"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const auto ev = tdtest::events_of_type(tdtest::read_events(out + "/events.jsonl"), "step");
    QCOMPARE(ev.size(), size_t(steps));

    // Rank 0 reads item 0 of each FAKE_NVML_* list, rank 1 item 1 (two_gpus()).
    const nlohmann::json want0 = {{"gpu_util_pct", 37},     {"gpu_mem_used_bytes", 1073741824}, {"gpu_power_w", 312.456},
                                  {"gpu_temp_c", 61},       {"gpu_sm_clock_mhz", 1980},         {"gpu_throttle", 0x44}};
    const nlohmann::json want1 = {{"gpu_util_pct", 0},  {"gpu_mem_used_bytes", 0}, {"gpu_power_w", 70.0},
                                  {"gpu_temp_c", 33},   {"gpu_sm_clock_mhz", 345}, {"gpu_throttle", 0}};
    int read_steps = 0;
    for (const nlohmann::json& e : ev) {
      const int64_t step = e.at("step").get<int64_t>();
      if (!e.contains("gpu_util_pct")) {
        QVERIFY2(step != 1, "the first step always has a GPU reading");
        for (const char* k : kGpuKeys) QVERIFY2(!e.contains(k), k);  // a step reads all or none
        continue;
      }
      ++read_steps;
      for (auto it = want0.begin(); it != want0.end(); ++it) {
        QVERIFY2(e.contains(it.key()), it.key().c_str());
        QCOMPARE(e[it.key()].get<double>(), it.value().get<double>());
      }
      QVERIFY(e["gpu_mem_used_bytes"].is_number_integer());
      QVERIFY(e["gpu_throttle"].is_number_integer());
      QCOMPARE(e.at("gpu_throttle_reasons").get<std::string>(), std::string("sw_power_cap,hw_thermal_slowdown"));
      const nlohmann::json& ranks = e.at("ranks");
      QCOMPARE(ranks.size(), size_t(2));
      for (int rk = 0; rk < 2; ++rk) {
        const nlohmann::json& want = rk == 0 ? want0 : want1;
        if (!ranks[rk].contains("gpu_util_pct")) continue;  // rank 1's 0.1 s clock is its own
        for (auto it = want.begin(); it != want.end(); ++it) QCOMPARE(ranks[rk].at(it.key()).get<double>(), it.value().get<double>());
      }
    }
    QVERIFY(read_steps >= 1);
    const nlohmann::json& first = ev[0].at("ranks");
    QVERIFY2(first[1].contains("gpu_power_w"), first.dump().c_str());
    QCOMPARE(first[1]["gpu_power_w"].get<double>(), 70.0);

    // The fake's call log: two processes (the ranks), each at most one reading per step of
    // six queries, none of them the identity ones.
    QFile f(log);
    QVERIFY(f.open(QIODevice::ReadOnly));
    std::map<std::string, std::map<std::string, int>> calls;  // pid -> function -> count
    for (const QByteArray& line : f.readAll().split('\n')) {
      const QList<QByteArray> w = line.split(' ');
      if (w.size() == 3) calls[w[2].toStdString()][w[0].toStdString()]++;
    }
    QCOMPARE(calls.size(), size_t(2));
    for (const auto& [pid, fns] : calls) {
      const int readings = fns.count("nvmlDeviceGetUtilizationRates") ? fns.at("nvmlDeviceGetUtilizationRates") : 0;
      QVERIFY2(readings >= 1 && readings <= steps, pid.c_str());
      for (const char* fn : {"nvmlDeviceGetMemoryInfo", "nvmlDeviceGetPowerUsage", "nvmlDeviceGetTemperature", "nvmlDeviceGetClockInfo",
                             "nvmlDeviceGetCurrentClocksThrottleReasons"})
        QCOMPARE(fns.count(fn) ? fns.at(fn) : 0, readings);
      for (const char* fn : {"nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetPciInfo_v3"}) QVERIFY2(!fns.count(fn), fn);
    }

    // The store: every reading under the table's metric names, rank by rank; nothing unknown.
    td::store::Store st(dir.filePath("run.db").toStdString());
    td::store::Ingester ing(st, (out + "/events.jsonl").toStdString());
    const auto stats = ing.poll_all();
    QCOMPARE(stats.skipped, size_t(0));
    QCOMPARE(stats.unknown_fields, size_t(0));
    QCOMPARE(stored(st, "gpu-run", "gpu_util_pct", 0, 1), 37.0);
    QCOMPARE(stored(st, "gpu-run", "gpu_mem_used_bytes", 0, 1), 1073741824.0);
    QCOMPARE(stored(st, "gpu-run", "gpu_power_w", 0, 1), 312.456);
    QCOMPARE(stored(st, "gpu-run", "gpu_temp_c", 0, 1), 61.0);
    QCOMPARE(stored(st, "gpu-run", "gpu_sm_clock_mhz", 0, 1), 1980.0);
    QCOMPARE(stored(st, "gpu-run", "gpu_throttle", 0, 1), 68.0);
    QCOMPARE(stored(st, "gpu-run", "rank_gpu_util_pct", 0, 1), 37.0);
    QCOMPARE(stored(st, "gpu-run", "rank_gpu_power_w", 1, 1), 70.0);
    QCOMPARE(stored(st, "gpu-run", "rank_gpu_temp_c", 1, 1), 33.0);
    QCOMPARE(stored(st, "gpu-run", "rank_gpu_sm_clock_mhz", 1, 1), 345.0);
    QCOMPARE(stored(st, "gpu-run", "rank_gpu_throttle", 1, 1), 0.0);
    QCOMPARE(stored(st, "gpu-run", "rank_gpu_mem_used_bytes", 1, 1), 0.0);
    QCOMPARE(st.metric_series("gpu-run", "gpu_util_pct", 0, 1, steps).size(), size_t(read_steps));
  }

  // No NVML (an absent library) or a CPU run without TRAINDECK_NVML_DEVICE: the run trains as
  // ever, its steps have no gpu_* field; the first says why on stderr.
  void a_run_without_nvml_has_no_gpu_fields() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const tdtest::TinyRun t = tdtest::write_tiny_run(dir.path(), tdtest::generated_text(2000));
    QVERIFY2(t.prepare.exit_code == 0, qPrintable(t.prepare.err));
    two_gpus();
    const QString log = dir.filePath("nvml.log");
    qputenv("FAKE_NVML_LOG", log.toUtf8());
    for (int variant = 0; variant < 2; ++variant) {
      if (variant == 0) {
        qputenv("TRAINDECK_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
        qputenv("TRAINDECK_NVML_DEVICE", "0");
      } else {
        qputenv("TRAINDECK_NVML_LIBRARY", TD_FAKE_NVML);  // there, but a CPU run has no GPU
        qunsetenv("TRAINDECK_NVML_DEVICE");
      }
      const QString out = dir.filePath(QString("run%1").arg(variant));
      const tdtest::ProcResult r = tdtest::engine({"train", "--config", t.cfg, "--out", out, "--no-events-stdout", "--set", "train.steps=3",
                                                   "--set", "train.checkpoint_interval=0"});
      QVERIFY2(r.exit_code == 0, qPrintable(r.err));
      const auto ev = tdtest::events_of_type(tdtest::read_events(out + "/events.jsonl"), "step");
      QCOMPARE(ev.size(), size_t(3));
      for (const nlohmann::json& e : ev) {
        for (const char* k : kGpuKeys) QVERIFY2(!e.contains(k), k);
        QVERIFY(!e.contains("gpu_throttle_reasons"));
      }
      if (variant == 0)
        QVERIFY2(r.err.contains("note: no GPU telemetry for cpu: TRAINDECK_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 cannot be loaded"),
                 qPrintable(r.err));
      else
        QVERIFY2(!r.err.contains("GPU telemetry"), qPrintable(r.err));
    }
    QVERIFY2(!QFile::exists(log), "a CPU run queried a GPU");
  }

  // `traindeck-engine gpus`: every GPU with one reading, as JSON; without NVML an empty list, the
  // reason in nvml_error and on stderr, exit status 0.
  void the_gpus_command_lists_each_gpu() {
    two_gpus();
    qputenv("TRAINDECK_NVML_LIBRARY", TD_FAKE_NVML);
    tdtest::ProcResult r = tdtest::engine({"gpus"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    nlohmann::json j = nlohmann::json::parse(r.out.toStdString());
    QVERIFY(j.at("nvml_error").is_null());
    QCOMPARE(j.at("gpus").size(), size_t(2));
    const nlohmann::json& g0 = j["gpus"][0];
    QCOMPARE(g0.at("name").get<std::string>(), std::string("NVIDIA H100 80GB HBM3"));
    QCOMPARE(g0.at("uuid").get<std::string>(), std::string("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"));
    QCOMPARE(g0.at("pci_bus_id").get<std::string>(), std::string("00000000:3B:00.0"));
    QCOMPARE(g0.at("mem_total_bytes").get<uint64_t>(), uint64_t(80) << 30);
    QCOMPARE(g0.at("power_w").get<double>(), 312.456);
    QCOMPARE(g0.at("throttle").get<std::string>(), std::string("sw_power_cap,hw_thermal_slowdown"));
    QCOMPARE(j["gpus"][1].at("index").get<int>(), 1);
    QCOMPARE(j["gpus"][1].at("sm_clock_mhz").get<double>(), 345.0);

    qputenv("TRAINDECK_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1");
    r = tdtest::engine({"gpus"});
    QCOMPARE(r.exit_code, 0);
    j = nlohmann::json::parse(r.out.toStdString());
    QVERIFY(j.at("gpus").empty());
    QVERIFY2(j.at("nvml_error").get<std::string>().find("cannot be loaded") != std::string::npos, r.out.toUtf8().constData());
    QVERIFY2(r.err.contains("TRAINDECK_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 cannot be loaded"), qPrintable(r.err));
  }

  void the_device_at_a_pci_bus_id() {
    two_gpus();
    Nvml nvml(TD_FAKE_NVML);
    QCOMPARE(nvml.index_of_pci_bus_id("00000000:86:00.0"), std::optional<unsigned>(1));
    QCOMPARE(nvml.index_of_pci_bus_id("0000:3b:00.0"), std::optional<unsigned>(0));  // CUDA's spelling
    QVERIFY(!nvml.index_of_pci_bus_id("0000:3c:00.0"));
    QVERIFY(!nvml.index_of_pci_bus_id("3b"));
    QVERIFY(!nvml.index_of_pci_bus_id(""));
    QCOMPARE(nvml.index_of_uuid("GPU-1d2e3f40-0000-1111-2222-333344445555"), std::optional<unsigned>(1));
  }
};

QTEST_GUILESS_MAIN(TestNvml)
#include "test_nvml.moc"
