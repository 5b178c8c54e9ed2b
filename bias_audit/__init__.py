"""bias-audit: audits bias in LLM councils and LLM responses.

The one import name of the distribution. Its subpackages live in folders at the repository root
(worker/, consumers/, producers/, schemas/, analysis/, ...), mapped here by pyproject.toml's
package-dir; this folder holds only what belongs to the package itself.
"""

__version__ = "0.1.0"
