"""Where a redis-py client points, as a fencelock server URL and manager options.

A redis-py client (``redis.Redis``, ``redis.RedisCluster``, a Sentinel ``master_for`` client,
or their ``redis.asyncio`` twins) keeps its connection settings in keyword arguments; this
module turns them into the one URL and the options :class:`fencelock.LockManager` takes:

| redis-py | fencelock |
|---|---|
| ``host``, ``port``, ``db`` | ``redis://host:port/db`` |
| ``username``, ``password`` (or a ``credential_provider``, asked once) | ``redis://user:password@...`` (percent-encoded) |
| an ``SSLConnection`` (``ssl=True``, ``rediss://``) | ``rediss://``; ``ssl_ca_certs`` → ``tls_ca_file``, ``ssl_certfile``/``ssl_keyfile`` → ``tls_client_cert``/``tls_client_key``, ``ssl_cert_reqs="none"`` → ``tls_insecure`` |
| a ``UnixDomainSocketConnection`` (``unix_socket_path``) | ``redis+unix:///path?db=N&user=U&pass=P`` |
| a Sentinel-managed master pool | ``redis+sentinel://s1:p1,s2:p2/service/db?sentinel_user=U&sentinel_password=P`` |
| a ``RedisCluster`` | ``redis+cluster://n1:p1,n2:p2`` |
| ``socket_timeout``, ``socket_connect_timeout`` | ``server_timeout`` (at most 1 s), ``connect_timeout`` |

A setting fencelock cannot honour as asked (a CA given as data or as a directory, an
encrypted client key, OCSP, cipher or version limits, a replica pool, ``force_master_ip``)
is a ``ValueError`` naming the setting, never its value. The URL holds the password: it is
never shown, and :class:`ServerSpec`'s ``repr`` replaces credentials with ``***``.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple
from urllib.parse import quote

import redis.asyncio.cluster
import redis.asyncio.connection
import redis.asyncio.sentinel
import redis.cluster
import redis.connection
import redis.sentinel

# The per-server timeout when the client sets no socket timeout (redis-py then waits forever;
# fencelock's own default, ttl/20 within [0.01, 1] s, is too tight for the first connection of
# a short lock on a loaded machine, so the drop-in uses the default's upper bound).
DEFAULT_SERVER_TIMEOUT = 1.0

_SSL_CONNECTIONS = (redis.connection.SSLConnection, redis.asyncio.connection.SSLConnection)
_UNIX_CONNECTIONS = (
    redis.connection.UnixDomainSocketConnection,
    redis.asyncio.connection.UnixDomainSocketConnection,
)
_SENTINEL_POOLS = (
    redis.sentinel.SentinelConnectionPool,
    redis.asyncio.sentinel.SentinelConnectionPool,
)
_CLUSTERS = (redis.cluster.RedisCluster, redis.asyncio.cluster.RedisCluster)

# TLS settings of redis-py that fencelock has no equivalent for: refused rather than dropped,
# since dropping any of them would connect differently from what the user asked for.
_UNSUPPORTED_TLS = (
    "ssl_ca_data",
    "ssl_ca_path",
    "ssl_password",
    "ssl_validate_ocsp",
    "ssl_validate_ocsp_stapled",
    "ssl_ocsp_context",
    "ssl_ocsp_expected_cert",
    "ssl_min_version",
    "ssl_ciphers",
    "ssl_include_verify_flags",
    "ssl_exclude_verify_flags",
)


@dataclass(frozen=True)
class ServerSpec:
    """The fencelock URL and manager options for one redis-py client."""

    url: str = field(repr=False)
    """The server URL, credentials included (never show it)."""
    shown: str
    """The URL with its credentials replaced by ``***``."""
    options: Dict[str, Any] = field(default_factory=dict)
    """Keyword arguments for the manager (TLS files, timeouts)."""

    def __repr__(self) -> str:
        return f"ServerSpec({self.shown!r}, options={self.options!r})"


def server_spec(client: Any) -> ServerSpec:
    """The fencelock server URL and manager options for the servers ``client`` points at."""
    if isinstance(client, _CLUSTERS):
        return _cluster(client)
    pool = getattr(client, "connection_pool", None)
    if pool is None or not hasattr(pool, "connection_kwargs"):
        raise TypeError(
            f"expected a redis-py client (redis.Redis, redis.RedisCluster or their "
            f"redis.asyncio twins), got {type(client).__name__}"
        )
    kwargs: Mapping[str, Any] = pool.connection_kwargs
    connection_class = getattr(pool, "connection_class", None)
    if isinstance(pool, _SENTINEL_POOLS):
        return _sentinel(pool, kwargs)
    if _is_subclass(connection_class, _UNIX_CONNECTIONS):
        return _unix(kwargs)
    tls = _is_subclass(connection_class, _SSL_CONNECTIONS)
    scheme = "rediss" if tls else "redis"
    auth, shown_auth = _userinfo(kwargs)
    address = _address(kwargs.get("host") or "localhost", kwargs.get("port") or 6379)
    path = f"/{int(kwargs.get('db') or 0)}"
    return ServerSpec(
        url=f"{scheme}://{auth}{address}{path}",
        shown=f"{scheme}://{shown_auth}{address}{path}",
        options=_options(kwargs, tls),
    )


def _unix(kwargs: Mapping[str, Any]) -> ServerSpec:
    user, password = _credentials(kwargs)
    path = quote(str(kwargs.get("path") or ""), safe="/")
    query = [f"db={int(kwargs.get('db') or 0)}"]
    shown = list(query)
    if password is not None:
        if user:
            query.append(f"user={quote(user, safe='')}")
            shown.append("user=***")
        query.append(f"pass={quote(password, safe='')}")
        shown.append("pass=***")
    return ServerSpec(
        url=f"redis+unix://{path}?{'&'.join(query)}",
        shown=f"redis+unix://{path}?{'&'.join(shown)}",
        options=_options(kwargs, tls=False),
    )


def _sentinel(pool: Any, kwargs: Mapping[str, Any]) -> ServerSpec:
    if not getattr(pool, "is_master", True):
        raise ValueError(
            "a lock needs the master: use sentinel.master_for(...), not slave_for(...)"
        )
    manager = pool.sentinel_manager
    if getattr(manager, "_force_master_ip", None) is not None:
        raise ValueError("force_master_ip is not supported by fencelock's Sentinel entries")
    sentinels: List[Any] = list(manager.sentinels)
    if not sentinels:
        raise ValueError("the Sentinel client names no sentinels")
    sentinel_kwargs: Mapping[str, Any] = sentinels[0].connection_pool.connection_kwargs
    master_tls = _is_subclass(getattr(pool, "connection_class", None), _SSL_CONNECTIONS)
    sentinel_tls = _is_subclass(
        getattr(sentinels[0].connection_pool, "connection_class", None), _SSL_CONNECTIONS
    )
    if master_tls != sentinel_tls:
        raise ValueError(
            "fencelock speaks TLS to both the sentinels and the master, or to neither: "
            "give ssl=True to both (sentinel_kwargs too) or to neither"
        )
    hosts = ",".join(
        _address(
            s.connection_pool.connection_kwargs.get("host") or "localhost",
            s.connection_pool.connection_kwargs.get("port") or 26379,
        )
        for s in sentinels
    )
    scheme = "rediss+sentinel" if master_tls else "redis+sentinel"
    auth, shown_auth = _userinfo(kwargs)
    path = f"/{quote(str(pool.service_name), safe='')}/{int(kwargs.get('db') or 0)}"
    query, shown_query = [], []
    s_user, s_password = _credentials(sentinel_kwargs)
    if s_password is not None:
        if s_user:
            query.append(f"sentinel_user={quote(s_user, safe='')}")
            shown_query.append("sentinel_user=***")
        query.append(f"sentinel_password={quote(s_password, safe='')}")
        shown_query.append("sentinel_password=***")
    q = f"?{'&'.join(query)}" if query else ""
    shown_q = f"?{'&'.join(shown_query)}" if shown_query else ""
    return ServerSpec(
        url=f"{scheme}://{auth}{hosts}{path}{q}",
        shown=f"{scheme}://{shown_auth}{hosts}{path}{shown_q}",
        options=_options(kwargs, master_tls),
    )


def _cluster(client: Any) -> ServerSpec:
    kwargs: Mapping[str, Any] = client.get_connection_kwargs()
    nodes: List[Tuple[str, int]] = []
    known = list(client.get_nodes()) + list(client.nodes_manager.startup_nodes.values())
    for node in known:
        address = (str(node.host), int(node.port))
        if address not in nodes:
            nodes.append(address)
    if not nodes:
        raise ValueError("the RedisCluster client names no nodes")
    tls = bool(kwargs.get("ssl")) or _is_subclass(
        kwargs.get("connection_class"), _SSL_CONNECTIONS
    )
    scheme = "rediss+cluster" if tls else "redis+cluster"
    auth, shown_auth = _userinfo(kwargs)
    hosts = ",".join(_address(h, p) for h, p in nodes)
    return ServerSpec(
        url=f"{scheme}://{auth}{hosts}",
        shown=f"{scheme}://{shown_auth}{hosts}",
        options=_options(kwargs, tls),
    )


def _options(kwargs: Mapping[str, Any], tls: bool) -> Dict[str, Any]:
    socket_timeout = kwargs.get("socket_timeout")
    options: Dict[str, Any] = {
        "server_timeout": DEFAULT_SERVER_TIMEOUT
        if not socket_timeout
        else min(max(float(socket_timeout), 0.01), DEFAULT_SERVER_TIMEOUT),
    }
    connect_timeout = kwargs.get("socket_connect_timeout")
    if connect_timeout:
        options["connect_timeout"] = min(max(float(connect_timeout), 0.01), 3600.0)
    if tls:
        options.update(_tls_options(kwargs))
    return options


def _tls_options(kwargs: Mapping[str, Any]) -> Dict[str, Any]:
    for name in _UNSUPPORTED_TLS:
        if kwargs.get(name):
            raise ValueError(
                f"the client's {name} has no fencelock equivalent (supported: ssl_ca_certs, "
                "ssl_certfile, ssl_keyfile, ssl_cert_reqs); see docs/migrating.md"
            )
    options: Dict[str, Any] = {}
    reqs = kwargs.get("ssl_cert_reqs", "required")
    if reqs is None or reqs == "none" or reqs == ssl.CERT_NONE:
        options["tls_insecure"] = True
    if kwargs.get("ssl_ca_certs"):
        options["tls_ca_file"] = kwargs["ssl_ca_certs"]
    certfile, keyfile = kwargs.get("ssl_certfile"), kwargs.get("ssl_keyfile")
    if certfile or keyfile:
        # redis-py takes a certificate file that also holds its key; fencelock reads the key
        # from the file it is told, so the same file serves as both.
        options["tls_client_cert"] = certfile or keyfile
        options["tls_client_key"] = keyfile or certfile
    return options


def _credentials(kwargs: Mapping[str, Any]) -> Tuple[Optional[str], Optional[str]]:
    """(username, password) from the client's settings or its credential provider."""
    provider = kwargs.get("credential_provider")
    if provider is not None:
        creds = tuple(provider.get_credentials())
        if len(creds) == 1:
            return None, _text(creds[0])
        return _text(creds[0]), _text(creds[1])
    user, password = kwargs.get("username"), kwargs.get("password")
    return (
        None if user is None else _text(user),
        None if password is None else _text(password),
    )


def _userinfo(kwargs: Mapping[str, Any]) -> Tuple[str, str]:
    """``user:password@`` (percent-encoded) and its shown form ``***@``."""
    user, password = _credentials(kwargs)
    if password is None and not user:
        return "", ""
    encoded = f"{quote(user or '', safe='')}:{quote(password or '', safe='')}@"
    return encoded, "***@"


def _address(host: Any, port: Any) -> str:
    text = str(host)
    if ":" in text and not text.startswith("["):
        text = f"[{text}]"
    return f"{text}:{int(port)}"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, (bytes, bytearray)) else str(value)


def _is_subclass(cls: Any, bases: Tuple[type, ...]) -> bool:
    return isinstance(cls, type) and issubclass(cls, bases)
