// A key-authenticated Session to a test SshdFixture as its user, with the host key accepted:
// what most remote tests start from.
#pragma once

#include "remote/session.h"
#include "sshd_fixture.h"

namespace td::remote::testing {

/// Connects to `sshd` on 127.0.0.1 (timeout_ms per call), accepts its host key when unknown
/// (appended to sshd.known_hosts) and authenticates with sshd.user_key. Throws td::Error.
inline Session user_session(const SshdFixture& sshd, int timeout_ms = 15000) {
  ConnectOptions o;
  o.host = "127.0.0.1";
  o.port = sshd.port;
  o.user = sshd.user;
  o.known_hosts = sshd.known_hosts;
  o.timeout_ms = timeout_ms;
  Session s = Session::connect(o);
  if (s.host_key().status == HostKeyStatus::Unknown) s.accept_host_key();
  s.authenticate(Auth::key(sshd.user_key));
  return s;
}

}  // namespace td::remote::testing
