import os
import sys

sys.path.insert(0, os.path.abspath('../..'))

extensions = [
    'oslo_config.sphinxext',
    'openstackdocstheme',
]

project = 'cinder-flash'
copyright = '2026, cinder-flash developers'
master_doc = 'index'
source_suffix = '.rst'
exclude_patterns = ['_build']
pygments_style = 'native'
html_theme = 'openstackdocs'
openstackdocs_repo_name = 'cinder-flash/cinder-flash'
openstackdocs_use_storyboard = False
openstackdocs_auto_name = False
html_last_updated_fmt = '%Y-%m-%d'
