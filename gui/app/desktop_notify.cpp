#include "gui/app/desktop_notify.h"

#include <QApplication>
#include <QDBusConnection>
#include <QDBusConnectionInterface>
#include <QDBusMessage>
#include <QPointer>
#include <QSystemTrayIcon>
#include <QVariantMap>

#include <optional>

namespace td::gui {

AlertNotifier::Backend desktopNotificationBackend(QObject* owner) {
  QPointer<QObject> guard(owner);
  auto tray = std::make_shared<QPointer<QSystemTrayIcon>>();
  auto has_service = std::make_shared<std::optional<bool>>();
  return [guard, tray, has_service](const QString& title, const QString& body, const QString& severity) -> bool {
    if (!guard) return false;
    if (QSystemTrayIcon::isSystemTrayAvailable()) {
      if (!*tray) {
        *tray = new QSystemTrayIcon(QApplication::windowIcon(), guard);
        (*tray)->setToolTip(QStringLiteral("TrainDeck"));
        (*tray)->show();
      }
      const auto icon = severity == QLatin1String("critical") ? QSystemTrayIcon::Critical
                        : severity == QLatin1String("info")   ? QSystemTrayIcon::Information
                                                              : QSystemTrayIcon::Warning;
      (*tray)->showMessage(title, body, icon, 10000);
      return true;
    }
    // The Desktop Notifications Specification: Notify(app_name, replaces_id, app_icon, summary,
    // body, actions, hints, expire_timeout) -> id; hint urgency 0 low, 1 normal, 2 critical.
    static const QString kService = QStringLiteral("org.freedesktop.Notifications");
    QDBusConnection bus = QDBusConnection::sessionBus();
    if (!has_service->has_value())
      *has_service = bus.isConnected() && bus.interface() && bus.interface()->isServiceRegistered(kService).value();
    if (!**has_service) return false;
    QDBusMessage m = QDBusMessage::createMethodCall(kService, QStringLiteral("/org/freedesktop/Notifications"), kService,
                                                    QStringLiteral("Notify"));
    QVariantMap hints;
    hints.insert(QStringLiteral("urgency"), QVariant::fromValue<uchar>(severity == QLatin1String("critical") ? 2 : 1));
    m << QStringLiteral("TrainDeck") << uint(0) << QStringLiteral("traindeck") << title << body << QStringList() << hints
      << int(-1);
    return bus.send(m);
  };
}

}  // namespace td::gui
