"""Builds the conversations shipped for replay: `python conversations/build.py`.

Each is recorded through the real loop under the `full` policy, so the files are ordinary `--trace` files:
the replies are written here (a scripted model plays them), arithmetic runs for real, and the network tools
answer with the texts below (written for this project) through stand-ins with the real tools' signatures and
docstrings, so the recorded instructions are the real ones. The header names the planted facts, the probe
points and the probes. The usage numbers in the files are the scripted model's estimates. The tools offered are
the ones TOOLS names, the default tools when the files were made: a tool added to DEFAULT_TOOLS since is not
offered, and the files stay as they are.
"""
import functools
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from agent import TinyReAct  # noqa: E402
from models.scripted import ScriptedModel  # noqa: E402
from tools import tools_named  # noqa: E402
from traces import Trace  # noqa: E402

TOOLS = ["add_numbers", "subtract_numbers", "multiply_numbers", "divide_numbers", "get_temperature",
         "search_wikipedia_page", "wikipedia_coordinates", "wikipedia_summary"]

LISBON = (
    "Lisbon is the capital and largest city of Portugal, with about 545,000 people in the city proper and close to "
    "three million in its metropolitan area. It lies on the north bank of the Tagus estuary, where the river widens "
    "into the Sea of Straw before it meets the Atlantic, and it is the westernmost capital of mainland Europe. The "
    "city is built on a series of steep hills, traditionally counted as seven, which give it its many viewpoints "
    "(miradouros), its funiculars and its famous trams. Settled long before the Romans, who called it Olisipo, the "
    "city was ruled by the Moors from the eighth century until 1147, when it was taken during the Second Crusade. "
    "Lisbon became the centre of a global maritime empire in the fifteenth and sixteenth centuries, when expeditions "
    "such as Vasco da Gama's sailed from Belém to India. On 1 November 1755 an earthquake, followed by a tsunami and "
    "fires, destroyed much of the city; the Baixa district was rebuilt afterwards on a regular grid under the Marquis "
    "of Pombal, one of the first examples of earthquake-resistant planning in Europe. Today the historic quarters of "
    "Alfama, Mouraria, Bairro Alto and Chiado sit beside modern districts such as Parque das Nações, built for the "
    "1998 World Exposition. Lisbon has a Mediterranean climate with mild, wet winters and warm, dry summers; it is "
    "one of the sunniest capitals in Europe. The city is served by Humberto Delgado Airport, a four-line metro, "
    "suburban trains, ferries across the Tagus and two road bridges: the 25 de Abril Bridge, a suspension bridge "
    "opened in 1966, and the Vasco da Gama Bridge, opened in 1998. It is Portugal's political, economic and cultural "
    "centre, home to the national government, several universities, the Gulbenkian Foundation and many museums, and "
    "it hosts large international events, from technology conferences to football finals. Tourism has grown strongly "
    "since the 2010s, and with it debates about housing costs in the historic centre."
)
PORTO = (
    "Porto, also known as Oporto, is the second-largest city in Portugal, with about 232,000 people in the city "
    "proper and around 1.7 million in its metropolitan area. It stands on the steep north bank of the Douro river, "
    "close to where the river flows into the Atlantic Ocean, facing the city of Vila Nova de Gaia across the water. "
    "Its history goes back to a Roman-era settlement called Portus Cale, a name that later gave the whole country "
    "its name. The historic centre, with the Ribeira waterfront, the cathedral and the medieval walls, was declared "
    "a UNESCO World Heritage Site in 1996. Porto is known worldwide for port wine, a fortified wine made from grapes "
    "grown in the Douro valley upstream and traditionally shipped down the river to age in the lodges of Vila Nova "
    "de Gaia. Six bridges cross the Douro in the city, among them the double-deck Dom Luís I Bridge and the Maria Pia "
    "railway bridge designed by Gustave Eiffel's company. The city has a temperate, Atlantic-influenced climate: "
    "winters are mild and rainy, and summers are warm but cooler than in Lisbon. Porto's economy has long been based "
    "on trade, textiles and wine; today it also has a large university, a growing technology sector and a busy "
    "airport, Francisco Sá Carneiro. Its landmarks include the Clérigos Tower, the São Bento railway station with its "
    "blue-and-white tile panels, the Livraria Lello bookshop and the Casa da Música concert hall. Porto was a European "
    "Capital of Culture in 2001."
)
SINTRA = (
    "Sintra is a town and municipality in the Lisbon District of Portugal, about 25 km northwest of Lisbon, on the "
    "slopes of the Sintra Mountains near the Atlantic coast. Its cooler, wetter microclimate made it a summer retreat "
    "for Portuguese kings and nobles, who built palaces and gardens among the forested hills. The Cultural Landscape "
    "of Sintra, including the Pena Palace, the Moorish Castle, the Sintra National Palace and the Quinta da Regaleira, "
    "has been a UNESCO World Heritage Site since 1995. The town is reached from Lisbon by suburban train in about 40 "
    "minutes and is one of the most visited day trips in the country."
)
BELEM_TOWER = (
    "The Belém Tower, officially the Tower of Saint Vincent, is a fortified tower on the north bank of the Tagus in "
    "the Belém district of Lisbon. Built between 1514 and 1519 in the Manueline style, it served both as part of the "
    "defences of the river mouth and as a ceremonial gateway to the city. Together with the nearby Jerónimos "
    "Monastery it was designated a UNESCO World Heritage Site in 1983."
)
TRAMWAYS = (
    "The Lisbon tramway network has served the city since 1873, first with horse-drawn cars and, from 1901, with "
    "electric trams. Of a network that once covered much of the city, six routes remain. Line 28 is the best known: "
    "it runs from Martim Moniz through Graça, Alfama, Baixa, Chiado and Estrela to Campo de Ourique, climbing steep "
    "streets too narrow for modern vehicles, and it is operated with the small yellow 'Remodelado' cars, rebuilt in "
    "the 1990s from trams of the 1930s. Line 15 to Belém uses modern articulated trams. The network is operated by "
    "Carris, which also runs the city's buses and its funiculars and street lift. Because of its route past many "
    "landmarks, line 28 is crowded with visitors, and pickpocketing on it is a known problem."
)
ALFA_PENDULAR = (
    "The Alfa Pendular is Portugal's fastest train service, operated by CP with tilting trains that reach 220 km/h. "
    "Its main route links Lisbon and Porto, a journey of a little under three hours, and continues south to Faro and "
    "north to Braga and Guimarães on some services."
)
PENA = (
    "The Pena Palace is a Romanticist castle on a hilltop above Sintra, built in the mid-nineteenth century for King "
    "Ferdinand II on the site of a monastery. Its brightly painted walls, mix of styles and surrounding park make it "
    "one of the most visited monuments in Portugal; on clear days it can be seen from Lisbon."
)
METRO = (
    "The Lisbon Metro has four lines and about 50 stations. The Red line, extended in 2012, connects Humberto Delgado "
    "Airport with the city, reaching the centre with one change in about 25 minutes."
)
PORT_WINE = (
    "Port wine is a fortified wine produced in the Douro valley in northern Portugal. Brandy is added during "
    "fermentation, which stops it and leaves the wine sweet and strong, usually around 19 to 22 per cent alcohol. "
    "The Douro region was one of the first wine regions in the world to be demarcated, in 1756. The grapes grow on "
    "steep terraces of schist along the river and its tributaries; the most planted varieties include Touriga "
    "Nacional, Touriga Franca and Tinta Roriz. After the harvest the young wine was traditionally carried down the "
    "river in flat-bottomed boats called rabelos to the lodges of Vila Nova de Gaia, opposite Porto, where it ages "
    "in wooden casks. There are several styles: ruby ports are aged briefly and kept fruity; tawny ports age longer "
    "in small casks and take on nutty, oxidised flavours; vintage ports are made from the grapes of a single "
    "declared year and age mostly in the bottle; white and rosé ports are also made. The trade was long dominated by "
    "British merchant families, which is why many port houses carry English names. Today most lodges in Gaia offer "
    "tours and tastings, and the Douro valley itself is a UNESCO World Heritage Site, visited by train, road and "
    "river cruise."
)
LELLO = (
    "Livraria Lello is a bookshop in the centre of Porto, opened in its current building in 1906. Its neo-Gothic "
    "facade and its carved wooden interior with a forked red staircase have made it one of the most visited shops in "
    "the world; visitors pay an entrance fee that can be deducted from a book purchase."
)
SERRALVES = (
    "Serralves is a cultural institution in Porto comprising a museum of contemporary art designed by Álvaro Siza, "
    "an Art Deco villa and an 18-hectare park. The museum, opened in 1999, is the most visited art museum in Portugal."
)
DOM_LUIS = (
    "The Dom Luís I Bridge is a double-deck metal arch bridge across the Douro between Porto and Vila Nova de Gaia. "
    "It was designed by Théophile Seyrig, a former partner of Gustave Eiffel, and opened in 1886. Its arch spans 172 "
    "metres. The upper deck carries line D of the Porto Metro and pedestrians, about 45 metres above the river; the "
    "lower deck carries road traffic and pedestrians along the quays of the Ribeira."
)
MATOSINHOS = (
    "Matosinhos is a city on the Atlantic coast immediately north of Porto, known for its long sandy beach, its "
    "fishing harbour and its grilled-fish restaurants. It is reached from central Porto by metro line A."
)
TIME_PT = (
    "Portugal uses Western European Time (WET, UTC+0) in winter and Western European Summer Time (WEST, UTC+1) from "
    "the last Sunday of March to the last Sunday of October. The Azores are one hour behind the mainland."
)

CANNED = {
    ("search_wikipedia_page", ("Lisbon",)):
        "Lisbon; Lisbon Metro; Lisbon District; 1755 Lisbon earthquake; Lisbon Cathedral",
    ("wikipedia_summary", ("Lisbon", 10)): LISBON,
    ("wikipedia_coordinates", ("Lisbon",)): "latitude 38.7223, longitude -9.1393 (Lisbon)",
    ("get_temperature", (38.7223, -9.1393)): ["15.2 °C at 2026-03-10T12:00 (latitude 38.72, longitude -9.14)",
                                               "16.1 °C at 2026-03-13T11:00 (latitude 38.72, longitude -9.14)"],
    ("wikipedia_summary", ("Sintra", 3)): SINTRA,
    ("wikipedia_summary", ("Belém Tower", 5)): BELEM_TOWER,
    ("wikipedia_coordinates", ("Belém Tower",)): "latitude 38.6916, longitude -9.2160 (Belém Tower)",
    ("wikipedia_coordinates", ("Jerónimos Monastery",)): "latitude 38.6979, longitude -9.2068 (Jerónimos Monastery)",
    ("search_wikipedia_page", ("Tram 28 Lisbon",)): "Lisbon tramways; Remodelado; Carris; Tram 28",
    ("wikipedia_summary", ("Lisbon tramways", 6)): TRAMWAYS,
    ("wikipedia_coordinates", ("Porto",)): "latitude 41.1496, longitude -8.6109 (Porto)",
    ("get_temperature", (41.1496, -8.6109)): ["12.9 °C at 2026-03-11T09:00 (latitude 41.15, longitude -8.61)",
                                               "11.8 °C at 2026-03-14T18:00 (latitude 41.15, longitude -8.61)"],
    ("wikipedia_summary", ("Porto", 10)): PORTO,
    ("search_wikipedia_page", ("Lisbon Porto train",)):
        "Alfa Pendular; Linha do Norte; Intercidades; Comboios de Portugal",
    ("wikipedia_summary", ("Alfa Pendular", 4)): ALFA_PENDULAR,
    ("wikipedia_coordinates", ("Sintra",)): "latitude 38.8029, longitude -9.3817 (Sintra)",
    ("get_temperature", (38.8029, -9.3817)): ["13.7 °C at 2026-03-12T15:00 (latitude 38.80, longitude -9.38)"],
    ("wikipedia_summary", ("Pena Palace", 5)): PENA,
    ("search_wikipedia_page", ("Lisbon airport metro",)):
        "Lisbon Metro; Humberto Delgado Airport; Aeroporto (Lisbon Metro)",
    ("wikipedia_summary", ("Lisbon Metro", 4)): METRO,
    ("search_wikipedia_page", ("Douro wine",)): "Port wine; Douro DOC; Douro Valley; Quinta do Noval",
    ("wikipedia_summary", ("Port wine", 10)): PORT_WINE,
    ("wikipedia_summary", ("Livraria Lello", 4)): LELLO,
    ("search_wikipedia_page", ("Porto art museum",)): "Serralves; Museu Nacional Soares dos Reis; Casa da Música",
    ("wikipedia_summary", ("Serralves", 4)): SERRALVES,
    ("wikipedia_summary", ("Dom Luís I Bridge", 6)): DOM_LUIS,
    ("search_wikipedia_page", ("beach near Porto",)): "Matosinhos; Foz do Douro; Vila Nova de Gaia; Espinho",
    ("wikipedia_summary", ("Matosinhos", 3)): MATOSINHOS,
    ("wikipedia_summary", ("Time in Portugal", 3)): TIME_PT,
}

# Each turn: the user's message, then (thought, action) steps, then (thought, answer).
LONG = [
    ("Hi! I'm planning a trip to Portugal in March: a conference in Lisbon, then a few days in Porto. Can you help me "
     "along the way?",
     [], ("A greeting and a plan; nothing to look up yet.",
          "Gladly. Ask me anything about Lisbon, Porto, the weather, distances or your budget as you go.")),
    ("From now on, whenever you give me a temperature, also give it in Fahrenheit.",
     [], ("A standing instruction for the rest of the conversation.",
          "Understood: every temperature I give you will come in Celsius and Fahrenheit.")),
    ("Tell me about Lisbon.",
     [("I should find the right page first.", 'search_wikipedia_page("Lisbon")'),
      ("The page is called Lisbon; I'll read its summary.", 'wikipedia_summary("Lisbon", 10)')],
     ("I have a good overview.",
      "Lisbon is Portugal's capital, on the Tagus estuary, built on steep hills. It was rebuilt after the 1755 "
      "earthquake (the Baixa grid), and its old quarters are Alfama, Mouraria, Bairro Alto and Chiado. It has a metro, "
      "trams and ferries, and mild, sunny weather.")),
    ("What's the weather like there right now?",
     [("I need Lisbon's coordinates.", 'wikipedia_coordinates("Lisbon")'),
      ("Now the current temperature at those coordinates.", "get_temperature(38.7223, -9.1393)"),
      ("The user wants Fahrenheit too: multiply by 1.8 first.", "multiply_numbers(15.2, 1.8)"),
      ("Then add 32.", "add_numbers(27.36, 32)")],
     ("I have both units.", "It is 15.2 °C (59.4 °F) in Lisbon right now.")),
    ("The conference fee is 480 euros and the hotel is 95 euros a night for 4 nights. What's my total so far?",
     [("Hotel first: 95 times 4.", "multiply_numbers(95, 4)"),
      ("Now add the conference fee.", "add_numbers(480, 380)")],
     ("Done.", "860 euros so far: 480 for the conference and 380 for the hotel.")),
    ("How far is Sintra from Lisbon, roughly?",
     [("The Sintra page should say.", 'wikipedia_summary("Sintra", 3)')],
     ("The summary gives the distance.", "About 25 km northwest of Lisbon, roughly 40 minutes by suburban train.")),
    ("Tell me about the Belém Tower.",
     [("I'll read the page summary.", 'wikipedia_summary("Belém Tower", 5)')],
     ("Enough for a short answer.",
      "A Manueline fortified tower on the Tagus in Belém, built 1514–1519 as a river defence and ceremonial gateway; a "
      "UNESCO site with the Jerónimos Monastery.")),
    ("Is it close to the Jerónimos Monastery?",
     [("I'll compare coordinates.", 'wikipedia_coordinates("Belém Tower")'),
      ("And the monastery's.", 'wikipedia_coordinates("Jerónimos Monastery")')],
     ("The two points differ by under 0.01 degrees in each direction.",
      "Yes, they are about a kilometre apart, an easy walk along the river.")),
    ("I'm sharing the hotel with a colleague after all. What's my half of the 380?",
     [("Divide by two.", "divide_numbers(380, 2)")],
     ("Simple.", "Your half of the hotel is 190 euros.")),
    ("Tell me about Tram 28.",
     [("I'll search for the right page.", 'search_wikipedia_page("Tram 28 Lisbon")'),
      ("The tramway network page should cover line 28.", 'wikipedia_summary("Lisbon tramways", 6)')],
     ("I know enough.",
      "Line 28 runs from Martim Moniz through Graça, Alfama, Baixa, Chiado and Estrela to Campo de Ourique with small "
      "yellow vintage cars. It's scenic but crowded, and pickpockets are a known problem.")),
    ("What's the temperature in Porto now?",
     [("I need Porto's coordinates.", 'wikipedia_coordinates("Porto")'),
      ("Now the temperature.", "get_temperature(41.1496, -8.6109)"),
      ("Fahrenheit as well: times 1.8.", "multiply_numbers(12.9, 1.8)"),
      ("Plus 32.", "add_numbers(23.22, 32)")],
     ("Both units ready.", "It is 12.9 °C (55.2 °F) in Porto.")),
    ("Give me an overview of Porto.",
     [("I'll read the Porto summary.", 'wikipedia_summary("Porto", 10)')],
     ("I have it.",
      "Porto is Portugal's second city, on the Douro near the Atlantic, facing Vila Nova de Gaia. Its Ribeira historic "
      "centre is a UNESCO site; it's famous for port wine, six bridges including the Dom Luís I, the Clérigos Tower, "
      "São Bento station's tiles and the Livraria Lello.")),
    ("How long is the train from Lisbon to Porto?",
     [("I'll search for the train service.", 'search_wikipedia_page("Lisbon Porto train")'),
      ("The Alfa Pendular is the fast service.", 'wikipedia_summary("Alfa Pendular", 4)')],
     ("The summary gives the time.", "The Alfa Pendular takes a little under three hours between Lisbon and Porto.")),
    ("I might do a day trip to Sintra. What's the weather there?",
     [("Sintra's coordinates first.", 'wikipedia_coordinates("Sintra")'),
      ("Then the temperature there.", "get_temperature(38.8029, -9.3817)"),
      ("Convert for the user: times 1.8.", "multiply_numbers(13.7, 1.8)"),
      ("Plus 32.", "add_numbers(24.66, 32)")],
     ("Sintra is cooler than Lisbon, as its microclimate suggests.",
      "It's about 14 °C (57 °F) in Sintra, cooler than Lisbon. Bring a layer.")),
    ("Is the Pena Palace worth it?",
     [("I'll read about it.", 'wikipedia_summary("Pena Palace", 5)')],
     ("Yes, it is one of the most visited monuments.",
      "Yes: a colourful 19th-century Romanticist castle above Sintra with a large park, one of Portugal's most visited "
      "monuments. Go early to avoid queues.")),
    ("By the way, my hotel booking reference is KX-4471-B, in case I need it later. What's the best way from the "
     "airport to the city centre?",
     [("I'll search for airport transport.", 'search_wikipedia_page("Lisbon airport metro")'),
      ("The metro page should say which line.", 'wikipedia_summary("Lisbon Metro", 4)')],
     ("The Red line serves the airport.",
      "Take the metro's Red line from the airport; with one change you reach the centre in about 25 minutes.")),
    ("How much bigger is Lisbon than Porto, in people?",
     [("From the summaries: Lisbon about 545,000 and Porto about 232,000 in the city proper.",
       "subtract_numbers(545000, 232000)")],
     ("That's the difference.", "Lisbon has about 313,000 more people in the city proper (545,000 against 232,000).")),
    ("Tell me about the Douro valley wines.",
     [("I'll search first.", 'search_wikipedia_page("Douro wine")'),
      ("Port wine is the main one; read its summary.", 'wikipedia_summary("Port wine", 10)')],
     ("I have plenty.",
      "The Douro's famous wine is port: fortified with brandy during fermentation, sweet and strong. Styles include "
      "ruby, tawny, vintage, white and rosé; the lodges in Vila Nova de Gaia offer tours and tastings.")),
    ("What's the temperature in Lisbon now?",
     [("Lisbon again; I have its coordinates.", "get_temperature(38.7223, -9.1393)"),
      ("Fahrenheit: times 1.8.", "multiply_numbers(16.1, 1.8)"),
      ("Plus 32.", "add_numbers(28.98, 32)")],
     ("Ready.", "It is 16.1 °C (61.0 °F) in Lisbon now.")),
    ("Budget check: flights 210, conference 480, my half of the hotel 190, and two train tickets at 36 each. Total?",
     [("Flights plus conference.", "add_numbers(210, 480)"),
      ("Plus my half of the hotel.", "add_numbers(690, 190)"),
      ("Two train tickets.", "multiply_numbers(2, 36)"),
      ("Add the trains.", "add_numbers(880, 72)")],
     ("That's everything listed.", "Your total is 952 euros.")),
    ("What's the Livraria Lello?",
     [("I'll read about it.", 'wikipedia_summary("Livraria Lello", 4)')],
     ("Got it.",
      "A 1906 bookshop in central Porto with a neo-Gothic facade and a carved wooden interior with a red forked "
      "staircase; there is an entrance fee, deductible from a book.")),
    ("My colleague's booking reference is KX-4417-B. Please don't mix it up with mine.",
     [], ("A second reference to keep apart from the user's own.",
          "Noted: your colleague's reference is KX-4417-B, separate from yours.")),
    ("Is Porto on the coast?",
     [("I have Porto's coordinates already, and the summary said it is near the Atlantic.",
       'wikipedia_coordinates("Porto")')],
     ("Longitude -8.61 is right at the coast.",
      "Nearly: Porto is on the Douro just before it meets the Atlantic, and the beaches of Foz are within the city.")),
    ("And the weather in Porto now?",
     [("Temperature at Porto's coordinates.", "get_temperature(41.1496, -8.6109)"),
      ("Fahrenheit: times 1.8.", "multiply_numbers(11.8, 1.8)"),
      ("Plus 32.", "add_numbers(21.24, 32)")],
     ("Done.", "It is 11.8 °C (53.2 °F) in Porto.")),
    ("Can you suggest an art museum in Porto?",
     [("I'll search.", 'search_wikipedia_page("Porto art museum")'),
      ("Serralves looks like the best known.", 'wikipedia_summary("Serralves", 4)')],
     ("Good choice.",
      "Serralves: a contemporary art museum by Álvaro Siza with an Art Deco villa and an 18-hectare park, the most "
      "visited art museum in Portugal.")),
    ("How many nights is it from March 12 to March 19?",
     [("Subtract the dates.", "subtract_numbers(19, 12)")],
     ("Seven.", "Seven nights.")),
    ("Tell me about the Dom Luís I Bridge.",
     [("I'll read the summary.", 'wikipedia_summary("Dom Luís I Bridge", 6)')],
     ("Got it.",
      "A double-deck iron arch bridge from 1886 between Porto and Gaia, designed by Théophile Seyrig. The upper deck "
      "carries metro line D and pedestrians 45 m above the river; the lower deck, cars and walkers.")),
    ("What's a 15% tip on a 64 euro dinner?",
     [("Multiply.", "multiply_numbers(64, 0.15)")],
     ("Done.", "9.60 euros.")),
    ("Is there a beach near Porto I could visit?",
     [("I'll search.", 'search_wikipedia_page("beach near Porto")'),
      ("Matosinhos is the nearest well-known one.", 'wikipedia_summary("Matosinhos", 3)')],
     ("Yes.",
      "Matosinhos, just north of Porto: a long sandy beach and excellent grilled fish, reached by metro line A.")),
    ("Remind me of my total budget.",
     [], ("I computed it earlier.", "952 euros.")),
    ("What time zone is Portugal in?",
     [("I'll check.", 'wikipedia_summary("Time in Portugal", 3)')],
     ("In March it changes on the last Sunday.",
      "Western European Time (UTC+0), switching to summer time (UTC+1) on the last Sunday of March.")),
    ("Thanks, that's all for now!",
     [], ("The user is done.", "Have a great trip!")),
]

FACTS = [
    {"id": "instruction", "kind": "standing instruction from the user (turn 2)",
     "text": "whenever you give me a temperature, also give it in Fahrenheit"},
    {"id": "sintra", "kind": "fact stated once in a tool observation (turn 14)", "text": "13.7 °C"},
    {"id": "booking", "kind": "fact stated once by the user (turn 16)", "text": "KX-4471-B"},
    {"id": "distractor", "kind": "distractor resembling the booking reference (turn 22)", "text": "KX-4417-B"},
]
PROBES = [
    {"id": "instruction", "fact": "instruction", "answer": "Fahrenheit", "questions": [
        "When you tell me a temperature, what else did I ask you to include?",
        "What unit did I ask you to add to every temperature?",
        "Which temperature scale should you always add, per my instruction?",
        "Remind me: what did I ask you to do whenever you give me a temperature?",
        "Besides Celsius, what temperature unit did I ask for?",
        "What was my standing instruction about temperatures?"]},
    {"id": "sintra", "fact": "sintra", "answer": "13.7", "questions": [
        "What temperature did the weather tool report for Sintra?",
        "When you checked Sintra's weather, how many degrees Celsius was it exactly?",
        "What was the exact Celsius reading for Sintra?",
        "How warm was Sintra according to get_temperature?",
        "What Celsius temperature did you get for Sintra earlier?",
        "Sintra's temperature reading, in °C, was what?"]},
    {"id": "booking", "fact": "booking", "answer": "KX-4471-B", "questions": [
        "What is my hotel booking reference?",
        "Remind me of my booking reference.",
        "Which booking reference is mine, not my colleague's?",
        "What reference code did I give you for my hotel?",
        "I need my hotel booking code: what was it?",
        "What's the reference for my hotel reservation?"]},
]

SUPER_BOWL_QUESTION = ("What is the current temperature, in degrees Fahrenheit, "
                       "at the stadium where Super Bowl LIX was played?")
SUPER_BOWL = [
    (SUPER_BOWL_QUESTION,
     [("I need to find out where Super Bowl LIX was played.", 'search_wikipedia_page("Super Bowl LIX")'),
      ("The page exists; its summary should name the stadium.", 'wikipedia_summary("Super Bowl LIX", 2)'),
      ("It was played at the Caesars Superdome. I need its coordinates.", 'wikipedia_coordinates("Caesars Superdome")'),
      ("Now the current temperature there.", "get_temperature(29.9508, -90.0811)"),
      ("15.5 °C; to convert to Fahrenheit, multiply by 1.8 first.", "multiply_numbers(15.5, 1.8)"),
      ("Then add 32.", "add_numbers(27.9, 32)")],
     ("I have the final result.", "It is 59.9 °F (15.5 °C) at the Caesars Superdome in New Orleans.")),
]
SUPER_BOWL_CANNED = {
    ("search_wikipedia_page", ("Super Bowl LIX",)): "Super Bowl LIX; Super Bowl LVIII; Super Bowl LX",
    ("wikipedia_summary", ("Super Bowl LIX", 2)): (
        "Super Bowl LIX was an American football game played to determine the champion of the National Football "
        "League (NFL) for the 2024 season. The game was played on February 9, 2025, at the Caesars Superdome in New "
        "Orleans, Louisiana."),
    ("wikipedia_coordinates", ("Caesars Superdome",)): "latitude 29.9508, longitude -90.0811 (Caesars Superdome)",
    ("get_temperature", (29.9508, -90.0811)): ["15.5 °C at 2026-11-29T23:45 (latitude 29.95, longitude -90.08)"],
}


def stand_ins(canned: dict) -> list:
    """The tools TOOLS names, with the network ones answering from `canned` (keyed by tool and arguments)."""
    served = {key: list(value) if isinstance(value, list) else [value] for key, value in canned.items()}

    def stand_in(tool):
        @functools.wraps(tool)
        def answer(**arguments):
            outputs = served[(tool.__name__, tuple(arguments.values()))]
            return outputs.pop(0) if len(outputs) > 1 else outputs[0]
        return answer
    network = {"get_temperature", "search_wikipedia_page", "wikipedia_coordinates", "wikipedia_summary"}
    return [stand_in(tool) if tool.__name__ in network else tool for tool in tools_named(TOOLS)]


def record(path: str, turns: list, canned: dict, meta: dict, probe_turns: list[int]) -> None:
    """Play `turns` through the loop into a trace file whose header holds `meta` and the probe points: the
    first model call of each turn in `probe_turns`, and the session's last call."""
    starts = [1]
    for _, steps, _ in turns:
        starts.append(starts[-1] + len(steps) + 1)
    meta = {**meta, "probe_points": [starts[turn - 1] for turn in probe_turns] + [starts[-1] - 1]}
    replies = []
    for _, steps, (thought, answer) in turns:
        for number, (step_thought, action) in enumerate(steps, 1):
            replies.append(f"Thought{number}: {step_thought}\nAction{number}: {action}")
        replies.append(f"Thought{len(steps) + 1}: {thought}\nAnswer: {answer}")
    model = ScriptedModel(replies)
    trace = Trace(path, meta=meta)
    agent = TinyReAct(model, tools=stand_ins(canned), ttl=8, trace=trace)
    for question, _, _ in turns:
        result = agent.query(question)
        assert result.stop_reason.value == "answer", (question, result.stop_reason)
    trace.close()
    assert not model.unused and len(model.calls) == starts[-1] - 1
    print(f"{path}: {len(turns)} user turns, {len(model.calls)} model calls, probe points {meta['probe_points']}")


def main(folder: str = HERE) -> None:
    record(os.path.join(folder, "long.jsonl"), LONG, CANNED, probe_turns=[12, 20, 26], meta={
        "title": "Planning a trip to Lisbon and Porto: 32 user turns",
        "facts": FACTS, "probes": PROBES,
        "recorded": "replies written for this project and played by the scripted model under the full policy; "
                    "network tool results are texts written for this project; usage numbers are estimates",
    })
    record(os.path.join(folder, "superbowl.jsonl"), SUPER_BOWL, SUPER_BOWL_CANNED, probe_turns=[], meta={
        "title": "The Super Bowl LIX temperature question: 6 steps",
        "facts": [{"id": "temperature", "kind": "fact stated once in a tool observation", "text": "15.5 °C"}],
        "probes": [{"id": "temperature", "fact": "temperature", "answer": "15.5", "questions": [
            "What temperature in Celsius did the weather tool report?",
            "How many degrees Celsius was it at the stadium?",
            "What was the Celsius reading at the Caesars Superdome?",
            "What did get_temperature return, in °C?",
            "Before converting, what was the temperature in Celsius?",
            "What Celsius value did you convert to Fahrenheit?"]}],
        "recorded": "replies written for this project and played by the scripted model under the full policy; "
                    "network tool results are texts written for this project; usage numbers are estimates",
    })


if __name__ == "__main__":
    main()
