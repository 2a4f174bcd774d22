"""Benchmarks: the registry of tasks, their rows and loaders."""

from evalsuite.tasks.loader import LoadedSplit, load_split
from evalsuite.tasks.registry import Task, get_task, list_tasks, parse_task_list, register_task
from evalsuite.tasks.rows import TaskRow, normalize_question
from evalsuite.tasks.subset import Subset, apply_subset, parse_subset

__all__ = [
    "LoadedSplit",
    "Subset",
    "Task",
    "TaskRow",
    "apply_subset",
    "get_task",
    "list_tasks",
    "load_split",
    "normalize_question",
    "parse_subset",
    "parse_task_list",
    "register_task",
]
