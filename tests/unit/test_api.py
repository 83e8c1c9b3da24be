import importlib
import importlib.resources
import pkgutil
import types

import mqusers
import mqusers.errors
from mqusers.errors import MqusersError


def test_public_api_is_exactly_all() -> None:
    # Submodules become attributes once imported; they are not the public API.
    names = {n for n, v in vars(mqusers).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    assert names - {"annotations"} == set(mqusers.__all__) - {"__version__"}


def test_typed_marker_ships() -> None:
    assert importlib.resources.files("mqusers").joinpath("py.typed").is_file()


def test_all_is_the_users_the_client_the_settings_and_the_errors() -> None:
    users = {n for n in mqusers.__all__ if n.startswith("Stomp") and n.endswith("User")}
    errors = {
        n
        for n in mqusers.__all__
        if isinstance(getattr(mqusers, n), type) and issubclass(getattr(mqusers, n), Exception)
    }
    assert errors == {"MqusersError", "OptionError", "MqError", "BrokerError", "ConnectionLost"}
    rest = set(mqusers.__all__) - users - errors - {"__version__"}
    assert rest == {"StompClient", "ClientConfig", "Publisher", "Sent", "Settings", "read_settings", "BrokerAddress",
                    "parse_broker_url", "parse_size"}  # fmt: skip
    assert len(users) == 8 and all(issubclass(getattr(mqusers, n), mqusers.StompUser) for n in users)


def every_module() -> list[types.ModuleType]:
    """Every module of the package, imported (the errors they define exist only once imported)."""
    names = [m.name for m in pkgutil.walk_packages(mqusers.__path__, "mqusers.")]
    return [importlib.import_module(name) for name in names]


def test_every_error_is_in_the_one_tree_and_drawn_in_it() -> None:
    errors = {
        value
        for module in every_module()
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, Exception) and value.__module__.startswith("mqusers")
    }
    assert len(errors) >= 18
    assert [e.__qualname__ for e in errors if not issubclass(e, MqusersError)] == []
    names = [e.__qualname__ for e in errors]
    assert sorted(n for n in names if names.count(n) > 1) == []  # no two errors of one name
    drawing = mqusers.errors.__doc__ or ""
    for error in errors - {MqusersError}:
        home = error.__module__.removeprefix("mqusers.").replace(".", "/") + ".py"
        line = next((line for line in drawing.splitlines() if f" {error.__name__} " in line), "")
        assert home in line, (error, home, line)  # drawn, with the module it lives in
