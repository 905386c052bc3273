"""A scripted server's resources and prompts (the cheap parts of MCP beside tools): fixed texts, and prompt
templates whose `{argument}` places are filled from the request."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._check import ScriptError, at, check_keys, need

__all__ = ["ScriptedResource", "ScriptedPrompt", "resource_from", "prompt_from"]


@dataclass(frozen=True, slots=True)
class ScriptedResource:
    uri: str
    name: str
    text: str
    description: str = ""
    mime_type: str = "text/plain"


@dataclass(frozen=True, slots=True)
class ScriptedPrompt:
    name: str
    text: str
    description: str = ""
    arguments: tuple[str, ...] = ()

    def render(self, arguments: Mapping[str, str]) -> str:
        """The template with each `{argument}` filled (a missing one left as written)."""
        text = self.text
        for key, value in arguments.items():
            text = text.replace("{" + key + "}", str(value))
        return text


def resource_from(spec: Any, where: str) -> ScriptedResource:
    if isinstance(spec, ScriptedResource):
        return spec
    need(spec, Mapping, where, "a mapping {uri, name, text, description, mime_type}")
    check_keys(spec, ("uri", "name", "text", "description", "mime_type"), where)
    uri = need(spec.get("uri"), str, at(where, "uri"), "the resource's URI (notes://today)")
    if "://" not in uri:
        raise ScriptError(f"{at(where, 'uri')}: a resource URI has a scheme (notes://today), got {uri!r}")
    return ScriptedResource(uri, need(spec.get("name", uri), str, at(where, "name"), "a text"),
                            need(spec.get("text"), str, at(where, "text"), "the resource's text"),
                            need(spec.get("description", ""), str, at(where, "description"), "a text"),
                            need(spec.get("mime_type", "text/plain"), str, at(where, "mime_type"), "a MIME type"))


def prompt_from(spec: Any, where: str) -> ScriptedPrompt:
    if isinstance(spec, ScriptedPrompt):
        return spec
    need(spec, Mapping, where, "a mapping {name, text, description, arguments}")
    check_keys(spec, ("name", "text", "description", "arguments"), where)
    arguments = need(spec.get("arguments", []), list, at(where, "arguments"), "a list of argument names")
    for number, item in enumerate(arguments):
        need(item, str, at(where, f"arguments[{number}]"), "an argument name")
    return ScriptedPrompt(need(spec.get("name"), str, at(where, "name"), "the prompt's name"),
                          need(spec.get("text"), str, at(where, "text"), "the prompt's text ({argument} places)"),
                          need(spec.get("description", ""), str, at(where, "description"), "a text"),
                          tuple(arguments))
