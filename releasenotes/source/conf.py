extensions = ['reno.sphinxext']
project = 'cinder-flash release notes'
master_doc = 'index'
source_suffix = '.rst'
html_theme = 'alabaster'
