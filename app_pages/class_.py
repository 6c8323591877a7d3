"""Class mode (issue 29), served at /class: the lecturer key, a room with its QR code, live questions from the quizzes
with the projector view, the moderation of students' sentences, the class's head ranking and the export. The
pieces: ui/class_lecturer.py; the students' side (on every page): ui/class_student.py."""

from ui import class_lecturer
from ui.shell import current_view

class_lecturer.render(current_view())
