// The desktop side of alert notifications (gui/runs/alert_watch.h AlertNotifier's backend):
// Qt's tray icon (QSystemTrayIcon::showMessage) where the desktop has a system tray, else the
// freedesktop notification service (org.freedesktop.Notifications.Notify over the session bus,
// the Desktop Notifications Specification) where it is registered, else nothing: the backend
// returns false and no error is ever raised (a headless machine, a minimal window manager).
//
// Threading rule: GUI thread. The D-Bus call is sent without waiting for its reply; whether the
// service is there is asked once, at the first notification.
#pragma once

#include <QObject>

#include "gui/runs/alert_watch.h"

namespace td::gui {

/// A backend whose tray icon (created at the first notification) is a child of `owner`.
AlertNotifier::Backend desktopNotificationBackend(QObject* owner);

}  // namespace td::gui
