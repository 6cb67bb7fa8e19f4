"""docker-context.py refuses the build contexts that break `docker build`: a target folder the Dockerfile
does not copy, and a pinned Package.resolved left out by .dockerignore. Run by scripts/validate-deploy.sh:
    python3 -m unittest discover -s scripts -p 'test_docker_context.py'
"""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "docker-context.py")


def run(dockerfile=None, dockerignore=None):
    """docker-context.py's exit status and output for the repository with these files in place of its own."""
    arguments = [sys.executable, SCRIPT]
    with tempfile.TemporaryDirectory() as folder:
        for option, text in (("--dockerfile", dockerfile), ("--dockerignore", dockerignore)):
            if text is not None:
                path = os.path.join(folder, option.lstrip("-"))
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(text)
                arguments += [option, path]
        result = subprocess.run(arguments, cwd=ROOT, capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


def read(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as handle:
        return handle.read()


class DockerContextTests(unittest.TestCase):
    def test_a_target_folder_the_dockerfile_does_not_copy_fails(self):
        dockerfile = read("Dockerfile")
        self.assertIn("COPY Examples ./Examples\n", dockerfile)
        status, output = run(dockerfile=dockerfile.replace("COPY Examples ./Examples\n", ""))
        self.assertEqual(status, 1, output)
        self.assertIn("`swift package describe` fails in the image's build context", output)
        self.assertIn("Examples", output)

    def test_package_resolved_left_out_of_the_context_fails(self):
        status, output = run(dockerignore=read(".dockerignore") + "Package.resolved\n")
        self.assertEqual(status, 1, output)
        self.assertIn("COPY Package.resolved: excluded by .dockerignore", output)


if __name__ == "__main__":
    unittest.main()
