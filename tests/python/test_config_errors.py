"""Config and model-parameter errors from Python: the same code and the same
message as C and Node for the same bad input (zoo-core's
tests/engine/config_errors.rs has the full list), naming the key and the
rule. Runs on the mock; model parameters are checked before any file is
opened."""

import math

import pytest

import zoo_keeper as zk

MISSING_MODEL = "/nonexistent/zoo/no-such-model.gguf"

GPU_LAYERS = (
    "invalid config `gpu_layers`: expected a whole number from -1 to 2147483647 "
    "(-1 offloads every layer), got -2"
)

# (config keys, the exact message): the cases every front door checks.
CASES = [
    (
        {"temperature": "hot"},
        'invalid config `temperature`: expected a finite number >= 0 (0 is greedy), got "hot"',
    ),
    (
        {"context_size": -1},
        "invalid config `context_size`: expected 0 (the model's trained context) or a whole "
        "number from 64 to 4294967295, got -1",
    ),
    ({"gpu_layers": -2}, GPU_LAYERS),
    (
        {"threads": 2.5},
        "invalid config `threads`: expected a whole number from 0 to 1024 (0 follows the free cores), got 2.5",
    ),
    # Python's json writes NaN and Infinity; the core reports them against the key.
    (
        {"temperature": math.nan},
        "invalid config `temperature`: expected a finite number >= 0 (0 is greedy), got NaN",
    ),
    (
        {"repeat_penalty": math.inf},
        "invalid config `repeat_penalty`: expected a finite number > 0 (1 disables it), got Infinity",
    ),
    (
        {"top_p": -math.inf},
        "invalid config `top_p`: expected a number greater than 0 and at most 1, got -Infinity",
    ),
    (
        {"stop": ["ok", math.nan]},
        "invalid config `stop[1]`: expected a non-empty string, got NaN",
    ),
]


def mock_agent(**config) -> zk.Agent:
    return zk.Agent(provider={"type": "mock"}, **config)


@pytest.mark.parametrize("config, message", CASES, ids=[next(iter(c)) for c, _ in CASES])
def test_bad_config_values_name_the_key_and_the_rule(config, message):
    with pytest.raises(zk.InvalidConfigError) as info:
        mock_agent(**config)
    assert info.value.code == 2
    assert str(info.value) == message


def test_unknown_key_is_named():
    with pytest.raises(zk.InvalidConfigError) as info:
        mock_agent(temprature=0.5)
    assert str(info.value).startswith(
        "invalid config `temprature`: unknown key; the config keys are `model_path`, `context_size`, "
    )


def test_model_params_are_checked_by_the_core():
    # gpu_layers below -1 was passed on and quietly treated as 0.
    with pytest.raises(zk.InvalidConfigError) as info:
        zk.Model(MISSING_MODEL, gpu_layers=-2)
    assert str(info.value) == GPU_LAYERS
    with pytest.raises(zk.InvalidConfigError) as info:
        zk.Model(MISSING_MODEL, gpu_layers=math.nan)
    assert str(info.value) == (
        "invalid config `gpu_layers`: expected a whole number from -1 to 2147483647 "
        "(-1 offloads every layer), got NaN"
    )
    with pytest.raises(zk.InvalidConfigError) as info:
        zk.Model(MISSING_MODEL, use_mmap="yes")
    assert str(info.value) == 'invalid config `use_mmap`: expected true or false, got "yes"'
    # Good values reach the loader, which names the missing file.
    with pytest.raises(zk.ModelLoadError):
        zk.Model(MISSING_MODEL, gpu_layers=-1)


def test_agent_with_a_bad_gpu_layers_fails_before_loading():
    with pytest.raises(zk.InvalidConfigError) as info:
        zk.Agent(model_path=MISSING_MODEL, gpu_layers=-2)
    assert str(info.value) == GPU_LAYERS


def test_non_object_config_json_is_invalid_config():
    # The Python surface always sends an object; the native entry point
    # refuses anything else in the core's words, as C does.
    with pytest.raises(zk.InvalidConfigError) as info:
        zk._native.NativeAgent("[1]", None)
    assert str(info.value) == (
        'invalid config `config`: expected a JSON object such as {"model_path": "model.gguf"}, got an array'
    )
    with pytest.raises(zk.InvalidConfigError) as info:
        zk._native.NativeModel(MISSING_MODEL, "[-1, true]")
    assert str(info.value) == (
        'invalid config `model_params`: expected a JSON object such as '
        '{"gpu_layers": 0, "use_mmap": true}, got an array'
    )
