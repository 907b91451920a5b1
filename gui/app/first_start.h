// FirstStart: what a store needs before Start run may go — its experiments loaded, and on a
// first start (no experiment yet) the demo experiment created, selected and its design in
// place; on any start the demo dataset registered and used by a design whose dataset is gone.
//
// Threading rule: a GUI-thread QObject; it reacts to ExperimentsModel::loaded (the model's
// store queries run on the store's thread) and never blocks.
#pragma once

#include <QObject>
#include <QPointer>
#include <QString>

#include <nlohmann/json.hpp>

namespace td::gui {

class DataPanel;
class ExperimentsModel;
class ModelDesigner;
class Sidebar;

class FirstStart : public QObject {
  Q_OBJECT
 public:
  /// The name of the experiment a first start creates.
  static constexpr const char* kDemoExperiment = "demo";

  /// `demo_dataset`: a prepared dataset folder the demo design trains on ("" for none: the
  /// Data page then starts with Debian's fortunes corpus as its source). The panels must outlive
  /// this object.
  FirstStart(ExperimentsModel* experiments, Sidebar* sidebar, ModelDesigner* designer, DataPanel* data,
             QString demo_dataset, QObject* parent = nullptr);

  /// The demo experiment's config (resources/configs/demo.json) without its data.path, which is
  /// relative to the source tree (an installed app has none). An empty object when unreadable.
  static nlohmann::json demoConfig();

  /// Starts waiting for the experiments of a store just set on the panels: ready() follows once
  /// they are loaded and, on a first start, once the demo experiment is in the model and selected
  /// (or the first run would land in "default" while the sidebar shows "demo"). A call before
  /// the previous wait ended replaces it.
  void begin();
  bool isReady() const { return ready_; }

 signals:
  /// Start run may go now.
  void ready();
  /// A first start: what to tell the person (shown in the status bar) and that the Design page
  /// should be in front.
  void welcome(const QString& message);

 private:
  // Creates the demo experiment on a first start and puts the demo dataset in place.
  void setUp();

  ExperimentsModel* experiments_;
  Sidebar* sidebar_;
  ModelDesigner* designer_;
  DataPanel* data_;
  QString demo_dataset_;
  QPointer<QObject> waiter_;
  bool ready_ = false;
};

}  // namespace td::gui
