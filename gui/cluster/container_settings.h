// ContainerSettings: the container part of one SSH node on the Clusters page (remote/container.h
// ContainerSpec): the runtime (podman / docker / apptainer), the image (empty = the bare engine
// bundle, no container) and extra bind mounts "host:container[:ro]", one a line or
// comma-separated. The designer shows it under the node table for the selected node and writes
// every edit into that node. Values are kept as typed (a mount without ':' stays a mount):
// td::remote::validate() reports them in the designer, so the person sees the message.
//
// Threading rule: GUI thread only; nothing here touches the network.
#pragma once

#include <QString>
#include <QWidget>

#include <string>
#include <vector>

#include "remote/container.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;

namespace td::gui {

/// The mounts typed in the mounts field: split at line ends and commas, each trimmed, empty
/// pieces dropped ("/a:/a, /b:/b:ro\n\n/c:/c" → 3 mounts). Nothing is checked here.
std::vector<std::string> splitMounts(const QString& text);

/// "podman: localhost/traindeck-engine:0.1.0" for an enabled spec, "" for the bare bundle
/// (with mounts but no image: "<runtime>: (no image)", which validate() refuses).
QString containerSummary(const td::remote::ContainerSpec& c);

class ContainerSettings : public QWidget {
  Q_OBJECT
 public:
  explicit ContainerSettings(QWidget* parent = nullptr);

  /// Shows `c` (no edited()).
  void setSpec(const td::remote::ContainerSpec& c);
  /// The setting as edited: the image trimmed, the mounts splitMounts() of the field.
  td::remote::ContainerSpec spec() const;

 signals:
  /// The person changed a field.
  void edited();

 private:
  void changed();

  bool loading_ = false;
  QComboBox* runtime_ = nullptr;
  QLineEdit* image_ = nullptr;
  QPlainTextEdit* mounts_ = nullptr;
};

}  // namespace td::gui
