"""Panel files: which judges (endpoint, model, key variable, prices) and how to call them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evalsuite.errors import DataError

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class JudgeConfig(BaseModel):
    """One judge: an OpenAI-compatible endpoint and model. The API key is read from `api_key_env`, never stored."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="identity recorded with every verdict (unique in the panel)")
    model: str
    base_url: str
    api_key_env: str | None = None
    temperature: float = 0.0
    max_tokens: int = 128
    seed: int | None = 0
    response_format: Literal["json_object", "none"] = "json_object"
    timeout_s: float = 60.0  # per attempt
    deadline_s: float = 300.0  # per call, every attempt and wait included
    max_retries: int = 5
    backoff_base_s: float = 0.5
    backoff_max_s: float = 8.0
    # US dollars per million tokens; 0 for a local server.
    price_input_per_mtok: float = 0.0
    price_output_per_mtok: float = 0.0

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError("must be the NAME of an environment variable (e.g. OPENAI_API_KEY), not a key")
        return value


class PanelConfig(BaseModel):
    """A panel of judges (Progress uses three) sharing a concurrency limit and a cache file."""

    model_config = ConfigDict(extra="forbid")

    judges: list[JudgeConfig] = Field(min_length=1)
    concurrency: int = Field(8, ge=1)
    cache: str | None = Field(None, description="SQLite cache path; relative paths are relative to the panel file")

    @model_validator(mode="after")
    def _unique_names(self) -> PanelConfig:
        names = [j.name for j in self.judges]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"judge names must be unique; repeated: {duplicates}")
        return self

    def identities(self) -> list[dict[str, str]]:
        """What the run records about each judge (no key, no key variable value)."""
        return [{"name": j.name, "model": j.model, "base_url": j.base_url} for j in self.judges]


# Reading a file and naming it in every error is the same few lines as protocol.recording.load_recording, but the
# formats (YAML, JSON) and what each error tells the user to do differ.
def load_panel(path: str | Path) -> PanelConfig:
    """Read a panel YAML file; errors name the file and the offending field."""
    import yaml

    from evalsuite.files import MAX_CONFIG_BYTES, load_untrusted_yaml, read_untrusted_bytes

    path = Path(path)
    try:
        # A panel file may be someone else's: a regular file, bounded, with bounded alias expansion (issue 26).
        data = load_untrusted_yaml(read_untrusted_bytes(path, MAX_CONFIG_BYTES, "panel file").decode("utf-8"), path)
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: the panel file is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except FileNotFoundError:
        raise DataError(f"panel file {path} does not exist", hint="see examples/panels/ for panel files") from None
    except yaml.YAMLError as exc:
        raise DataError(f"{path}: invalid YAML ({exc})") from None
    if isinstance(data, dict) and "api_key" in str(data):
        for judge in data.get("judges") or []:
            if isinstance(judge, dict) and "api_key" in judge:
                raise DataError(
                    f"{path}: judge {judge.get('name')!r} has a literal 'api_key'",
                    hint="put the key in an environment variable and name it with 'api_key_env'",
                )
    try:
        panel = PanelConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise DataError(
            f"{path}: field '{where}': {first['msg']}", hint="see docs/judges.md for the panel file format"
        ) from None
    if panel.cache is not None and not Path(panel.cache).is_absolute():
        panel.cache = str((path.parent / panel.cache).resolve())
    return panel
